"""The ``exclude`` setting: workspace roots whose sessions are never recorded.

A pattern is a glob (``fnmatch``: ``*`` also crosses ``/``) matched on the session's
workspace root; a pattern also covers every folder below what it names, so
``~/clients/acme`` excludes ``~/clients/acme/api`` too. ``~`` is the user's home. Pure.

Both sides are normalised as the file system reads a path: repeated ``/`` and a trailing ``/``
collapse (``/home//dev/app/`` is ``/home/dev/app``). Letter case folds only where the file
system ignores it: on macOS, whose default (APFS, HFS+) is case-insensitive, ``~/Clients/ACME``
and ``~/clients/acme`` are one folder; on Linux they are two. ``..`` is not resolved (through a
symlink it may lead elsewhere) and links are not followed: a pattern names a path as agents
report it.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

_SLASHES = re.compile(r"/{2,}")


@dataclass(frozen=True, slots=True)
class Exclusions:
    patterns: tuple[str, ...]  # as the user wrote them
    home: str
    fold_case: bool = False  # the file system ignores letter case (macOS's default)

    @classmethod
    def of(cls, patterns: Iterable[str], home: str, *, fold_case: bool | None = None) -> Exclusions:
        folds = sys.platform == "darwin" if fold_case is None else fold_case
        return cls(tuple(patterns), home.rstrip("/"), folds)

    def matching(self, workspace_root: str) -> str | None:
        """The first pattern that excludes ``workspace_root``, else None."""
        if not workspace_root:
            return None
        root = self._normal(workspace_root)
        for pattern in self.patterns:
            full = self.home + pattern[1:] if pattern == "~" or pattern.startswith("~/") else pattern
            full = self._normal(full)
            if fnmatch.fnmatchcase(root, full) or fnmatch.fnmatchcase(root, full.rstrip("/") + "/*"):
                return pattern
        return None

    def _normal(self, path: str) -> str:
        path = _SLASHES.sub("/", path).rstrip("/") or "/"
        return path.casefold() if self.fold_case else path
