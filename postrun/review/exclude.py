"""The ``exclude`` setting: workspace roots whose sessions are never recorded.

A pattern is a glob (``fnmatch``: ``*`` also crosses ``/``) matched on the session's
workspace root; a pattern also covers every folder below what it names, so
``~/clients/acme`` excludes ``~/clients/acme/api`` too. ``~`` is the user's home. Pure.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Exclusions:
    patterns: tuple[str, ...]  # as the user wrote them
    home: str

    @classmethod
    def of(cls, patterns: Iterable[str], home: str) -> Exclusions:
        return cls(tuple(patterns), home.rstrip("/"))

    def matching(self, workspace_root: str) -> str | None:
        """The first pattern that excludes ``workspace_root``, else None."""
        if not workspace_root:
            return None
        root = workspace_root.rstrip("/") or "/"
        for pattern in self.patterns:
            full = self.home + pattern[1:] if pattern == "~" or pattern.startswith("~/") else pattern
            full = full.rstrip("/") or "/"
            if fnmatch.fnmatchcase(root, full) or fnmatch.fnmatchcase(root, full.rstrip("/") + "/*"):
                return pattern
        return None
