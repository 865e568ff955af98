"""Ingesting sessions: read an agent's files, map them to v1.2 records, validate, store.

The one place where adapter, validation and store meet; ``postrun ingest`` and the capture
both come through here (a catch-up over many sessions through ``postrun.catchup``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

import apsw

from postrun.agents.cline import (
    MappingCache,
    SessionLocation,
    parse_session,
    snapshot_from_settings,
)
from postrun.agents.cline.locate import MESSAGES_SUFFIX
from postrun.errors import (
    Forgotten,
    NotFound,
    NotParseableYet,
    PostrunError,
    SourceError,
    StoreError,
)
from postrun.mapper import (
    MapRules,
    Prepared,
    Processes,
    map_files,
    prepare,
    read_admitted,
)
from postrun.records import MappedSession, RawFile
from postrun.review.apply import FlagMemo, flag_session
from postrun.review.exclude import Exclusions
from postrun.review.flags import RULES_VERSION
from postrun.store import vault
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.flags import set_rules_version, stored_rules_version
from postrun.store.forget import is_forgotten, lift_tombstone
from postrun.store.remap import session_ids, stored_mapped_session
from postrun.store.write import StoredState, UpsertResult, stored_state, upsert_session
from postrun.timestamps import utc_iso

_NOW_UTC: Callable[[], datetime] = functools.partial(datetime.now, UTC)
_T = TypeVar("_T")


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a session is read, mapped and stored.

    Parsing and mapping a large session allocates hundreds of thousands of containers, and
    each few hundred allocations would trigger a collection; the full ones walk the whole
    heap (a capture's mapping caches included). Parsed JSON and mapped records hold no
    cycles, so reference counting frees them anyway; the collector resumes afterwards.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def no_raw_copies(session_id: str) -> NotFound:
    return NotFound(f"session {session_id}", "no raw copies kept (ingested while keep_raw was off?)")


@dataclass(frozen=True, slots=True)
class IngestOutcome(UpsertResult):
    """What the store did with a session, and how long reading, mapping and storing took.

    ``unread`` names the session's files that could not be used this time (a torn
    helper transcript): the rest was stored, and so was what the store held of them.
    """

    elapsed_ms: float
    unread: tuple[SourceError, ...] = ()
    revived: bool = False  # it had been forgotten; ``ingest --force`` brought it back


@dataclass(frozen=True, slots=True)
class IngestFailure:
    session_id: str | None
    error: PostrunError

    @property
    def torn(self) -> bool:
        return isinstance(self.error, NotParseableYet)


class Progress(Protocol):
    def start(self, total: int, label: str = ...) -> None: ...

    def advance(self) -> None: ...

    def finish(self) -> None: ...


def refresh_flags(database: Database, *, now: datetime, captured_on: str, progress: Progress | None = None) -> int:
    """Re-flag every stored session from its stored records when the rules changed since it was
    flagged (the normal upsert: history keeps the earlier versions). Returns how many were
    re-flagged."""
    if stored_rules_version(database) == RULES_VERSION:
        return 0
    ids = session_ids(database)
    if progress is not None and ids:
        progress.start(len(ids), "re-flagging (the flag rules changed)")
    try:
        for session_id in ids:
            flagged = flag_session(stored_mapped_session(database, session_id))
            upsert_session(database, flagged, now=now, captured_on=captured_on)
            if progress is not None:
                progress.advance()
    finally:
        if progress is not None:
            progress.finish()
    set_rules_version(database, RULES_VERSION)
    return len(ids)


class Ingester:
    """Ingests sessions into one open store."""

    def __init__(
        self,
        database: Database,
        *,
        max_bytes: int,
        clock: Callable[[], datetime] = _NOW_UTC,
        timer: Callable[[], float] = time.perf_counter,
        hostname: str | None = None,
        keep_raw: bool = True,
        exclusions: Exclusions | None = None,
        flag_memo: FlagMemo | None = None,
        raw_copy_seconds: float = 0.0,
        mapping_processes: Processes | None = None,
    ) -> None:
        self.database = database
        self.mapping_processes = mapping_processes  # for its catch-ups (``postrun.catchup``)
        self.keep_raw = keep_raw
        self.raw_copy_seconds = raw_copy_seconds
        # Open sessions whose copies a live ingest left behind their records, with the time of
        # their newest copy (see ``copies_due``).
        self.behind: dict[str, str] = {}
        self.max_bytes = max_bytes
        self.clock = clock
        self.timer = timer
        self.hostname = hostname or socket.gethostname()
        self.rules = MapRules(max_bytes, exclusions, flag_memo)

    def ingest(
        self, location: SessionLocation, cache: MappingCache | None = None, *, force: bool = False, live: bool = False
    ) -> tuple[IngestOutcome, MappingCache]:
        """Ingest one session. Raises PostrunError (NotParseableYet for a torn file, Forgotten
        for a tombstoned one unless ``force``, Excluded for an excluded workspace); on any error
        the stored session is left exactly as it was.

        A ``live`` ingest of an open session copies its files to the vault at most every
        ``raw_copy_seconds``; any other ingest copies them whenever they changed."""
        with collector_paused():
            return self._ingest(location, cache, force, live)

    def mapping_cache(self, location: SessionLocation) -> MappingCache:
        """The mapping cache an ingest of the session would leave: it is read and mapped, nothing
        is stored. Raises as ``ingest`` does."""
        with collector_paused():
            files = read_admitted(location, self.rules)
            helpers = StoredHelpers(self.database, location.session_id)
            return prepare(files, self._stored_approvals(location.session_id), helpers, self.rules)[1]

    def copies_due(self, *, everything: bool = False) -> list[str]:
        """The sessions in ``behind`` whose newest copy is ``raw_copy_seconds`` old (``everything``: all)."""
        now = self.clock()
        return [session_id for session_id, copied in self.behind.items() if everything or self._due(copied, now)]

    def _due(self, copied: str, now: datetime) -> bool:
        # A copy stamped after ``now`` (the clock was set back) is due too: waiting for the
        # clock to catch up could leave the vault behind for hours.
        return not utc_iso(now - timedelta(seconds=self.raw_copy_seconds)) < copied <= utc_iso(now)

    def _ingest(
        self, location: SessionLocation, cache: MappingCache | None, force: bool, live: bool
    ) -> tuple[IngestOutcome, MappingCache]:
        started = self.timer()
        session_id = location.session_id
        forgotten = self.read(lambda database: is_forgotten(database, session_id))
        if forgotten and not force:
            raise forgotten_refusal(session_id)
        known = cache.transcript.layout if cache is not None and cache.transcript is not None else None
        files = read_admitted(location, self.rules, known)
        helpers = StoredHelpers(self.database, session_id)
        prepared, cache = prepare(files, self._stored_approvals(session_id), helpers, self.rules, cache)
        outcome = self.store(location, prepared, started, live=live)
        if forgotten:
            outcome = replace(outcome, revived=lift_tombstone(self.database, session_id))
        return outcome, cache

    def reingest(self, session_id: str) -> IngestOutcome:
        """Map a session again from the newest raw copies the vault keeps (its files are not read),
        and store it through the same upsert as an ingest.

        Raises NotFound when the vault keeps nothing of it, and PostrunError when its copies
        are older than its records (taken while ``keep_raw`` was off): reingesting those would
        roll the records back.
        """
        with collector_paused():
            started = self.timer()
            versions = vault.kept_versions(self.database, session_id)
            if not versions:
                raise no_raw_copies(session_id)
            kept = versions[-1].files
            raw = [RawFile(f.name, vault.read_blob(self.database, f.hash), f.fingerprint, f.settings) for f in kept]
            messages = next(
                (Path(f.fingerprint.path) for f in kept if f.name.endswith(f"/{session_id}{MESSAGES_SUFFIX}")), None
            )
            if messages is None:
                raise NotFound(f"session {session_id}", "the raw copies hold no messages file")
            folder = messages.parent
            location = SessionLocation(session_id, folder, messages, folder / f"{session_id}.json", folder.parent)
            files = parse_session(location, raw)
            state = self.stored_state(session_id)
            if state is not None:
                if {(f.path, f.size, f.mtime_ns) for f in state.source_files} != {
                    (f.path, f.size, f.mtime_ns) for f in files.source_files
                }:
                    raise PostrunError(
                        f"session {session_id}",
                        "its raw copies are older than its records (keep_raw was off, or the session is"
                        " open and its next copy not taken yet: see raw_copy_seconds)",
                    )
                approvals = state.approvals
            else:
                settings = next((file for file in raw if file.settings), None)
                approvals = snapshot_from_settings(
                    files.client_source, None if settings is None else settings.data, settings.name if settings else ""
                )
            # The vault holds these already.
            prepared, _ = map_files(files, approvals, (), StoredHelpers(self.database, session_id), self.rules)
            return self.store(location, prepared, started)

    def _vault_copies(self, session_id: str, paths: set[str]) -> list[RawFile]:
        """The vault's newest copies of files that could not be read this time: they stay the
        newest, as the records mapped from them stay stored."""
        try:
            versions = vault.kept_versions(self.database, session_id)
            kept = [f for f in versions[-1].files if f.fingerprint.path in paths] if versions else []
            return [RawFile(f.name, vault.read_blob(self.database, f.hash), f.fingerprint, f.settings) for f in kept]
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None

    def stored_state(self, session_id: str) -> StoredState | None:
        return self.read(lambda database: stored_state(database, session_id))

    def _stored_approvals(self, session_id: str) -> dict[str, Any] | None:
        state = self.stored_state(session_id)
        return None if state is None else state.approvals

    def store(
        self, location: SessionLocation, prepared: Prepared, started: float, *, live: bool = False
    ) -> IngestOutcome:
        mapped, raw = prepared.mapped, prepared.raw
        session_id = location.session_id
        where = str(location.messages)
        now = self.clock()
        copy = self.keep_raw and not (live and self._defer_copy(mapped, now))
        if mapped.unread:
            # What could not be read stays as it was stored: its fingerprint (so the records say
            # which version they hold, and the next start-up reads it again) and its raw copy.
            unread = {problem.where for problem in mapped.unread}
            state = self.stored_state(session_id)
            before = [f for f in state.source_files if f.path in unread] if state is not None else []
            mapped = dataclasses.replace(mapped, source_files=(*mapped.source_files, *before))
            if copy:
                raw = (*raw, *self._vault_copies(session_id, unread))
        try:
            result = upsert_session(
                self.database, mapped, now=now, captured_on=self.hostname, raw=raw if copy else (), steps=prepared.steps
            )
        except apsw.TooBigError:
            # This session's own content is beyond SQLite's limits: a fault of the session
            # (logged once, retried when it changes), not of the store.
            raise SourceError(where, "a value is too large for the store (SQLite's limit)") from None
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        if copy:
            self.behind.pop(session_id, None)
        elapsed_ms = (self.timer() - started) * 1000
        values = {f.name: getattr(result, f.name) for f in fields(result)}
        return IngestOutcome(**values, elapsed_ms=elapsed_ms, unread=mapped.unread)

    def _defer_copy(self, mapped: MappedSession, now: datetime) -> bool:
        """True when this ingest leaves the open session's copies behind its records (its newest
        copy is recent); remembered in ``behind`` so the capture copies it later."""
        if self.raw_copy_seconds <= 0 or "ended_at" in mapped.session:
            return False
        copied = self.read(lambda database: vault.last_copied(database, mapped.id))
        # Compressing a large transcript again after every message costs more than all the
        # rest of its re-ingest: a copy at most every ``raw_copy_seconds`` while it is written.
        if copied is None or self._due(copied, now):
            return False
        self.behind[mapped.id] = copied
        return True

    def read(self, read: Callable[[Database], _T]) -> _T:
        """What ``read`` reads from the store; its SQLite errors as the store's."""
        try:
            return read(self.database)
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None


def forgotten_refusal(session_id: str) -> Forgotten:
    return Forgotten(session_id, "forgotten (postrun forget); `postrun ingest --force` brings it back")
