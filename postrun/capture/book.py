"""What the capture knows about each session under one root of one agent, kept small.

For 10,000 sessions this stays a few megabytes: per session one id and two integers (the
fingerprint the poller last saw, the fingerprint of the last read), plus small sets of
open and recently changed sessions. Session paths are rebuilt from the root when needed
(``Source.location``).

``plan_catch_up`` compares a root with the store at start-up: sessions whose files are
the ones stored, unchanged (``postrun.capture.freshness``), are skipped without being read.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from postrun.agents.registry import Skipped, Source, as_source
from postrun.capture.freshness import FingerprintKey, fingerprint_key, same_files
from postrun.errors import NotFound, PostrunError
from postrun.records import SourceFile
from postrun.store.capture_state import stored_fingerprints
from postrun.store.db import Database
from postrun.store.vault import copies_behind

ACTIVE_SECONDS = 24 * 3600  # a session changed this recently is polled every tick


def skipped_line(entry: Skipped, kind: str) -> str:
    """The warning for an entry under an agent's root that is not a session (names may be unsafe)."""
    return f"{kind}: {os.fspath(entry.path)!a}: skipped ({entry.reason})"


def newest_mtime(files: Iterable[SourceFile]) -> float:
    return max((f.mtime_ns for f in files), default=0) / 1e9


@dataclass(frozen=True)
class CatchUpPlan:
    """A root compared with the store."""

    root_found: bool
    present: tuple[str, ...]  # every session in the root, in listing order
    changed: tuple[str, ...]  # new, or changed since stored: to ingest
    fingerprints: dict[str, FingerprintKey]  # the fingerprints seen now, for every present session
    unchanged: frozenset[str]  # stored with exactly these fingerprints: nothing to read
    open: frozenset[str]  # stored without an end time
    recent: dict[str, float]  # sessions whose files changed in the last 24 h -> newest mtime
    skipped: tuple[Skipped, ...] = field(default=())
    watch_first: tuple[str, ...] = ()  # open or recent sessions, most recently changed first


def plan_catch_up(root: Path | Source, database: Database, *, wall_now: float, keep_raw: bool = True) -> CatchUpPlan:
    """Which sessions under the root need ingesting (stat only: no session file is read).
    ``root``: a source, or a path (a root of the first registered agent).

    With ``keep_raw``, an open session whose raw copies are behind its records (a live ingest
    copies it at most every ``raw_copy_seconds``; capture may have been killed since) is read
    again, so the vault catches up with the files.

    Raises PostrunError when the root exists but cannot be listed.
    """
    source = as_source(root)
    fingerprint = source.adapter.fingerprint
    try:
        listing = source.list()
    except NotFound:
        return CatchUpPlan(False, (), (), {}, frozenset(), frozenset(), {})
    fingerprints: dict[str, FingerprintKey] = {}
    unchanged: set[str] = set()
    stored_open: set[str] = set()
    active_mtimes: dict[str, float] = {}
    recent: dict[str, float] = {}
    for location in listing.sessions:  # one session at a time: memory stays flat
        session_id = location.session_id
        try:
            files: tuple[SourceFile, ...] = fingerprint(location)
        except PostrunError:
            files = ()  # the ingest reports it
        fingerprints[session_id] = fingerprint_key(files)
        stored = stored_fingerprints(database, session_id)
        mtime = newest_mtime(files)
        if wall_now - mtime < ACTIVE_SECONDS:
            recent[session_id] = mtime
        if stored is not None:
            if stored.open:
                stored_open.add(session_id)
            behind = keep_raw and stored.open and copies_behind(database, session_id, stored.source_files)
            if files and same_files(stored.source_files, files) and not behind:
                unchanged.add(session_id)
        if session_id in recent or session_id in stored_open:
            active_mtimes[session_id] = mtime
    present = tuple(location.session_id for location in listing.sessions)
    return CatchUpPlan(
        root_found=True,
        present=present,
        changed=tuple(session_id for session_id in present if session_id not in unchanged),
        fingerprints=fingerprints,
        unchanged=frozenset(unchanged),
        open=frozenset(stored_open),
        recent=recent,
        skipped=listing.skipped,
        watch_first=tuple(sorted(active_mtimes, key=active_mtimes.__getitem__, reverse=True)),
    )


class SessionBook:
    """The capture's per-session memory; every method is thread-safe."""

    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self.wall = wall
        self._lock = threading.Lock()
        self._seen: dict[str, FingerprintKey | None] = {}  # session -> fingerprint the poller last saw
        self._read: dict[str, FingerprintKey] = {}  # session -> fingerprint when last read (or known stored)
        self._open: set[str] = set()
        self._recent: dict[str, float] = {}  # session -> wall time of its last change (last 24 h)
        # session -> its helper files the last read could not open (permissions), looked at each tick
        self._unopened: dict[str, tuple[str, ...]] = {}

    def load(self, plan: CatchUpPlan) -> None:
        """Start from a catch-up plan (start-up, or the store was recreated)."""
        with self._lock:
            self._seen = dict(plan.fingerprints)
            self._read = {session_id: plan.fingerprints[session_id] for session_id in plan.unchanged}
            self._open = set(plan.open)
            self._recent = dict(plan.recent)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._seen)

    def add(self, session_id: str) -> bool:
        """A session folder appeared; True when it was not known."""
        with self._lock:
            if session_id in self._seen:
                return False
            self._seen[session_id] = None
            self._recent[session_id] = self.wall()
            return True

    def remove(self, session_id: str) -> None:
        """The session's folder is gone (its stored data stays)."""
        with self._lock:
            self._seen.pop(session_id, None)
            self._read.pop(session_id, None)
            self._open.discard(session_id)
            self._recent.pop(session_id, None)
            self._unopened.pop(session_id, None)

    def saw(self, session_id: str, key: FingerprintKey) -> bool:
        """The poller saw these fingerprints; True when they differ from the last ones seen."""
        with self._lock:
            if session_id not in self._seen or self._seen[session_id] == key:
                return False
            self._seen[session_id] = key
            self._recent[session_id] = self.wall()
            return True

    def unsee(self, session_id: str) -> None:
        """Forget the fingerprints last seen and read, so the next poll takes the session as
        changed, reads it again and keeps it among the active ones (a file it could not open: a
        chmod changes no fingerprint)."""
        with self._lock:
            self._read.pop(session_id, None)
            self._unopened.pop(session_id, None)
            if session_id in self._seen:
                self._seen[session_id] = None
                self._recent[session_id] = self.wall()

    def seen_key(self, session_id: str) -> FingerprintKey | None:
        """The fingerprints the poller (or the start-up plan) last saw of the session."""
        with self._lock:
            return self._seen.get(session_id)

    def was_read_at(self, session_id: str, key: FingerprintKey) -> bool:
        with self._lock:
            return self._read.get(session_id) == key

    def read(
        self, session_id: str, key: FingerprintKey, *, is_open: bool | None = None, unopened: Iterable[str] = ()
    ) -> None:
        """The session was read at these fingerprints (stored, or found torn); ``unopened``: its
        helper files that read could not open (``unopened_files``)."""
        with self._lock:
            self._read[session_id] = key
            paths = tuple(unopened)
            if paths:
                self._unopened[session_id] = paths
            else:
                self._unopened.pop(session_id, None)
            if is_open is True:
                self._open.add(session_id)
            elif is_open is False:
                self._open.discard(session_id)

    def forget_reads(self) -> None:
        """The store was recreated: nothing is known to be stored any more."""
        with self._lock:
            self._read.clear()

    def unopened_files(self, session_id: str) -> tuple[str, ...]:
        """The helper files the session's last read could not open. A chmod that makes one
        readable changes none of its fingerprints: the poller asks whether it can open them now,
        instead of reading the whole session again at each tick to find out."""
        with self._lock:
            return self._unopened.get(session_id, ())

    def active(self) -> list[str]:
        """Sessions polled every tick: open ones, those changed in the last 24 hours and those
        with a helper file that could not be opened."""
        with self._lock:
            return list(self._open | self._recent.keys() | self._unopened.keys())

    def prune(self) -> None:
        cutoff = self.wall() - ACTIVE_SECONDS
        with self._lock:
            self._recent = {s: at for s, at in self._recent.items() if at >= cutoff and s in self._seen}


@dataclass(frozen=True, slots=True)
class Watched:
    """One agent's root as capture watches it: its source and its session book."""

    source: Source
    book: SessionBook

    @property
    def kind(self) -> str:
        return self.source.adapter.kind
