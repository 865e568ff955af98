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
from postrun.agents.codex.locate import Rollouts, group_sessions, rollout_at, root_of
from postrun.agents.codex.meta import ThreadMeta
from postrun.agents.codex.reading import read_meta
from postrun.agents.registry import Skipped
from postrun.errors import NotFound, PostrunError, SourceError


@dataclass(frozen=True, slots=True)
class Sessions:
    """A listing's sessions (a sub-agent's without its root thread's rollout among them), the
    rollouts whose first line is not written yet, and those that cannot be read (no session:
    skipped, with a warning that says why)."""

    sessions: tuple[SessionLocation, ...]
    unwritten: tuple[Rollout, ...] = ()
    unreadable: tuple[Skipped, ...] = ()


class ThreadIndex:
    """The ``session_meta`` of every rollout seen, by (path, inode)."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._metas: dict[tuple[Path, int], ThreadMeta] = {}
        self._by_thread: dict[str, ThreadMeta] = {}
        self._sessions: dict[str, SessionLocation] = {}
        self._lock = threading.Lock()

    def sessions(self, listing: Rollouts) -> Sessions:
        """The sessions of ``listing``, reading the first line of each rollout not seen yet."""
        metas: dict[str, ThreadMeta] = {}
        kept: dict[tuple[Path, int], ThreadMeta] = {}
        unreadable: list[Skipped] = []
        unwritten: list[Rollout] = []
        for rollout in listing.rollouts:
            try:
                key = (rollout.path, rollout.path.stat().st_ino)
                meta = self._metas.get(key) or read_meta(rollout, max_bytes=self._max_bytes)
            except (OSError, NotFound):
                continue  # gone since it was listed
            except SourceError as exc:
                unreadable.append(Skipped(rollout.path, exc.reason, True))
                continue
            if meta is None:
                unwritten.append(rollout)
                continue
            kept[key] = meta
            metas[rollout.thread_id] = meta
        grouped = group_sessions([rollout for rollout in listing.rollouts if rollout.thread_id in metas], metas)
        with self._lock:
            self._metas = kept
            self._by_thread = metas
            self._sessions = {session.session_id: session for session in grouped}
        return Sessions(tuple(grouped), tuple(unwritten), tuple(unreadable))

    def location(self, session_id: str) -> SessionLocation | None:
        """The session's rollouts as of the last listing."""
        with self._lock:
            return self._sessions.get(session_id)

    def session_of(self, path: str | Path, folder: Path | None = None) -> str | None:
        """The session a rollout file is of: its own thread id for a root thread, its root
        thread's for a child. A rollout not seen at the last listing has its first line read
        now (it joins its session's location); None while that line is not written."""
        rollout = rollout_at(Path(path), folder=folder)
        if rollout is None:
            return None
        with self._lock:
            meta = self._by_thread.get(rollout.thread_id)
        if meta is None:
            try:
                meta = read_meta(rollout, max_bytes=self._max_bytes)
            except PostrunError:
                return None
            if meta is None:
                return None
            self._learn(rollout, meta)
        with self._lock:
            return root_of(meta, self._by_thread) if meta.is_child else rollout.thread_id

    def _learn(self, rollout: Rollout, meta: ThreadMeta) -> None:
        with self._lock:
            self._by_thread[rollout.thread_id] = meta
            if not meta.is_child:
                known = self._sessions.get(rollout.thread_id)
                self._sessions[rollout.thread_id] = SessionLocation(
                    rollout.thread_id, rollout, known.children if known is not None else ()
                )
                return
            session_id = root_of(meta, self._by_thread)
            known = self._sessions.get(session_id)
            if known is None or any(child.thread_id == rollout.thread_id for child in known.children):
                return
            self._sessions[session_id] = SessionLocation(session_id, known.root, (*known.children, rollout))

    def folders(self, session_id: str) -> tuple[Path, ...]:
        """The folders the session's rollouts are in (its day folders, the archive)."""
        location = self.location(session_id)
        return _folders(location.rollouts) if location is not None else ()


def _folders(rollouts: Iterable[Rollout]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(rollout.path.parent for rollout in rollouts))
