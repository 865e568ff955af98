"""Cline's times as v1.2 timestamps (its epoch milliseconds: ``postrun.timestamps``)."""

from __future__ import annotations

from typing import Any

from postrun import schema


def valid_timestamp(value: Any) -> str | None:
    """``value`` when it is a v1.2 timestamp (ISO 8601 with a zone), else None."""
    return value if isinstance(value, str) and schema.is_timestamp(value) else None
