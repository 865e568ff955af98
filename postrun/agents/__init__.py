"""Agent adapters: each turns one agent's own files into v1.2 records."""

from __future__ import annotations

KNOWN_AGENTS = ("cline",)
