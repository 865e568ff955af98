"""Which session each rollout under a sessions folder is of, kept between listings.

A rollout's session is in its first line (``session_meta``), which never changes once
written: each file is read for it once (while it is not written yet, at every listing), so a
capture that lists the folder again reads only the rollouts that are new since.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from postrun.agents.codex.layout import Rollout, SessionLocation
from postrun.agents.codex.locate import Listing, group_sessions, rollout_at, root_of
from postrun.agents.codex.meta import ThreadMeta
from postrun.agents.codex.reading import read_meta
from postrun.errors import NotFound, SourceError


@dataclass(frozen=True, slots=True)
class Sessions:
    """A listing's sessions, and the rollouts whose first line could not be read."""

    sessions: tuple[SessionLocation, ...]
    problems: tuple[SourceError, ...] = ()


class ThreadIndex:
    """The ``session_meta`` of every rollout seen, by (path, inode)."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._metas: dict[tuple[Path, int], ThreadMeta] = {}
        self._by_thread: dict[str, ThreadMeta] = {}
        self._sessions: dict[str, SessionLocation] = {}
        self._lock = threading.Lock()

    def sessions(self, listing: Listing) -> Sessions:
        """The sessions of ``listing``, reading the first line of each rollout not seen yet."""
        metas: dict[str, ThreadMeta] = {}
        kept: dict[tuple[Path, int], ThreadMeta] = {}
        problems: list[SourceError] = []
        for rollout in listing.rollouts:
            key, meta = self._meta(rollout, problems)
            if meta is not None and key is not None:
                kept[key] = meta
                metas[rollout.thread_id] = meta
        grouped = group_sessions(listing.rollouts, metas)
        with self._lock:
            self._metas = kept
            self._by_thread = metas
            self._sessions = {session.session_id: session for session in grouped}
        return Sessions(tuple(grouped), tuple(problems))

    def _meta(self, rollout: Rollout, problems: list[SourceError]) -> tuple[tuple[Path, int] | None, ThreadMeta | None]:
        try:
            key = (rollout.path, rollout.path.stat().st_ino)
        except OSError:
            return None, None  # gone since it was listed
        known = self._metas.get(key)
        if known is not None:
            return key, known
        try:
            return key, read_meta(rollout, max_bytes=self._max_bytes)
        except NotFound:
            return None, None
        except SourceError as exc:
            problems.append(exc)
            return None, None

    def location(self, session_id: str) -> SessionLocation | None:
        """The session's rollouts as of the last listing."""
        with self._lock:
            return self._sessions.get(session_id)

    def session_of(self, path: str | Path) -> str | None:
        """The session a rollout file is of, once its first line was read: its own thread id
        for a root thread, its root thread's for a child; a rollout not seen yet is its own."""
        rollout = rollout_at(Path(path))
        if rollout is None:
            return None
        with self._lock:
            meta = self._by_thread.get(rollout.thread_id)
            if meta is None or not meta.is_child:
                return rollout.thread_id
            return root_of(meta, self._by_thread)

    def folders(self, session_id: str) -> tuple[Path, ...]:
        """The folders the session's rollouts are in (its day folders, the archive)."""
        location = self.location(session_id)
        return _folders(location.rollouts) if location is not None else ()


def _folders(rollouts: Iterable[Rollout]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(rollout.path.parent for rollout in rollouts))
