"""Ingesting one session: its agent's files read, prepared (``postrun.ingest.prepare``) and
stored through the one guarded write (``Ingester.store``).

``postrun ingest``, ``reingest`` and capture all come through here (many sessions at a time
through ``postrun.ingest.batches``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

import apsw

from postrun.agents.registry import Location, adapter_of
from postrun.errors import Excluded, NotParseableYet, PostrunError, SourceError, StoreError
from postrun.ingest.guard import Guarded, forgotten_refusal, guarded, vault_copies
from postrun.ingest.kept import reingest_session
from postrun.ingest.known import KnownSteps, StoredSteps
from postrun.ingest.prepare import MapRules, Prepared, ValidMemo, prepare, read_admitted
from postrun.records import MappedSession, StepRow
from postrun.review.apply import FlagMemo
from postrun.review.exclude import Exclusions
from postrun.store import vault
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.forget import lift_tombstone, remove_excluded, tombstone_kind
from postrun.store.write import (
    StepWrite,
    StoredState,
    StoredTurns,
    UpsertResult,
    stored_state,
    upsert_session,
)
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


@dataclass(frozen=True, slots=True)
class IngestOutcome(UpsertResult):
    """What the store did with a session, and how long reading, mapping and storing took.

    ``unread`` names the session's files that could not be used this time (a torn
    helper transcript): the rest was stored, and so was what the store held of them.
    ``incomplete`` names the files whose last line was not complete yet (left for the next read).
    """

    elapsed_ms: float
    unread: tuple[SourceError, ...] = ()
    incomplete: tuple[str, ...] = ()
    revived: bool = False  # it had been forgotten; ``ingest --force`` brought it back


def goes_on(location: Location, outcome: UpsertResult) -> bool:
    """The stored session may be written again: it is open, or its end is not final (a Codex
    thread between two turns), so its mapping cache is worth keeping after a start-up ingest."""
    return outcome.open or not adapter_of(location).end_is_final


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
        valid_memo: ValidMemo | None = None,
        raw_copy_seconds: float = 0.0,
        mapping_processes: Any | None = None,
    ) -> None:
        self.database = database
        self.mapping_processes = mapping_processes  # ``pool.Processes`` for its batched ingests
        self.keep_raw = keep_raw
        self.raw_copy_seconds = raw_copy_seconds
        # Open sessions whose copies a live ingest left behind their records, with the time of
        # their newest copy (see ``copies_due``).
        self.behind: dict[str, str] = {}
        self.max_bytes = max_bytes
        self.clock = clock
        self.timer = timer
        self.hostname = hostname or socket.gethostname()
        self.rules = MapRules(max_bytes, exclusions, flag_memo, valid_memo, keep_raw)
        # The mapping caches of sessions a write read again (stored by someone else meanwhile).
        self.fresh_caches: dict[str, Any] = {}
        self.known_steps = KnownSteps()  # what its last live writes left, not read back

    def ingest(
        self, location: Location, cache: Any | None = None, *, force: bool = False, live: bool = False
    ) -> tuple[IngestOutcome, Any]:
        """Ingest one session. Raises PostrunError (NotParseableYet for a torn file, Forgotten
        for a tombstoned one unless ``force``, Excluded for an excluded workspace); on any error
        the stored session is left exactly as it was.

        A ``live`` ingest of a session that has not ended for good (``Adapter.end_is_final``)
        copies its files to the vault at most every ``raw_copy_seconds``; any other ingest
        copies them whenever they changed."""
        with collector_paused():
            return self._ingest(location, cache, force, live)

    def mapping_cache(self, location: Location) -> Any:
        """The mapping cache an ingest of the session would leave: it is read and mapped, nothing
        is stored. Raises as ``ingest`` does."""
        with collector_paused():
            files = read_admitted(location, self.rules)
            helpers = StoredHelpers(self.database, location.session_id)
            state = self.stored_state(location.session_id)
            return prepare(files, None if state is None else state.approvals, helpers, self.rules)[1]

    def copies_due(self, *, everything: bool = False) -> list[str]:
        """The sessions in ``behind`` whose newest copy is ``raw_copy_seconds`` old (``everything``: all)."""
        now = self.clock()
        return [session_id for session_id, copied in self.behind.items() if everything or self._due(copied, now)]

    def _due(self, copied: str, now: datetime) -> bool:
        # A copy stamped after ``now`` (the clock was set back) is due too: waiting for the
        # clock to catch up could leave the vault behind for hours.
        return not utc_iso(now - timedelta(seconds=self.raw_copy_seconds)) < copied <= utc_iso(now)

    def _ingest(self, location: Location, cache: Any | None, force: bool, live: bool) -> tuple[IngestOutcome, Any]:
        started = self.timer()
        session_id = location.session_id
        # Only to spare the read: the write checks the tombstone again, inside its transaction.
        kind = None if force else self.read(lambda database: tombstone_kind(database, session_id))
        if kind is not None:
            raise forgotten_refusal(session_id, kind)
        try:
            files = read_admitted(location, self.rules, cache)
        except Excluded as exc:
            raise self.drop_excluded(exc) from None
        helpers = StoredHelpers(self.database, session_id)
        basis = self.stored_state(session_id)
        prepared, cache = prepare(files, None if basis is None else basis.approvals, helpers, self.rules, cache)
        outcome = self.store(location, prepared, started, live=live, force=force, basis=basis)
        return outcome, self.fresh_caches.pop(session_id, cache)

    def reingest(self, session_id: str) -> IngestOutcome:
        """Map a session again from the newest raw copies the vault keeps (its files are not read),
        and store it through the same guarded write as an ingest (``postrun.ingest.kept``)."""
        with collector_paused():
            return reingest_session(self, session_id)

    def stored_state(self, session_id: str) -> StoredState | None:
        return self.read(lambda database: stored_state(database, session_id))

    def store(
        self,
        location: Location,
        prepared: Prepared,
        started: float,
        *,
        live: bool = False,
        force: bool = False,
        basis: StoredState | None,
    ) -> IngestOutcome:
        """The one guarded write: in one transaction (a savepoint inside a batch's), every check
        that decides whether and what to write is made (``postrun.ingest.guard``: the tombstone,
        the exclude, the stored state ``prepared`` was mapped against (``basis``), the vault's
        last copy), then the session is upserted. A forget, an exclude or another writer that
        committed while the session was read and mapped is seen here, never missed."""
        session_id = location.session_id
        try:
            with self.database.transaction():
                known = self.known_steps.take(self.database, session_id) if live else None
                checked = guarded(self, location, prepared, basis, force=force)
                outcome, stored = self._write(location, checked, started, live, known)
                if checked.forgotten:
                    outcome = replace(outcome, revived=lift_tombstone(self.database, session_id))
            self.known_steps.wrote(self.database, session_id, stored if live else None)
        except Excluded as exc:  # its part of the transaction was rolled back
            raise self.drop_excluded(exc) from None
        except apsw.TooBigError:
            # This session's own content is beyond SQLite's limits: a fault of the session
            # (logged once, retried when it changes), not of the store.
            raise SourceError(str(location.where), "a value is too large for the store (SQLite's limit)") from None
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        return outcome

    def drop_excluded(self, refusal: Excluded) -> Excluded:
        """An excluded session is never recorded, whatever order its files appeared in: one stored
        before its workspace was known is removed now; one stored before the pattern was added is
        kept as it was (``forget.remove_excluded``). The refusal to report, saying which."""
        session_id = refusal.where
        try:
            done = remove_excluded(self.database, session_id, now=utc_iso(self.clock()))
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        if done == "removed":
            return Excluded(
                session_id, f"{refusal.reason}; removed what was stored of it before its workspace was known"
            )
        if done == "kept":
            return Excluded(
                session_id,
                f"{refusal.reason}; what was stored of it before is kept as it is"
                f" (`postrun forget {session_id}` removes it)",
            )
        return refusal

    def _write(
        self, location: Location, checked: Guarded, started: float, live: bool, known: StoredSteps | None
    ) -> tuple[IngestOutcome, StoredSteps]:
        """The upsert; the outcome, and the session's steps as now stored."""
        prepared, state = checked.prepared, checked.state
        mapped = prepared.mapped
        session_id = location.session_id
        now = self.clock()
        copy = self.keep_raw and not (live and self._defer_copy(location, mapped, now))
        raw = prepared.raw if copy else ()  # taken only for a copy: it may read the files again
        if mapped.unread:
            # What could not be read stays as it was stored: its fingerprint (so the records say
            # which version they hold, and the next start-up reads it again) and its raw copy.
            unread = {problem.where for problem in mapped.unread}
            before = [f for f in state.source_files if f.path in unread] if state is not None else []
            mapped = replace(mapped, source_files=(*mapped.source_files, *before))
            if copy:
                raw = (*raw, *vault_copies(self.database, session_id, unread))
        steps = prepared.steps
        turns = known.turns if known is not None else StoredTurns()
        result = upsert_session(
            self.database,
            mapped,
            now=now,
            captured_on=self.hostname,
            raw=raw if copy else (),
            steps=steps,
            known=None if known is None else known.digests,
            written=() if known is None else known.rows,
            turns=turns,
        )
        if copy:
            self.behind.pop(session_id, None)
        elapsed_ms = (self.timer() - started) * 1000
        values = {f.name: getattr(result, f.name) for f in fields(result)}
        outcome = IngestOutcome(**values, elapsed_ms=elapsed_ms, unread=mapped.unread, incomplete=mapped.incomplete)
        rows: tuple[StepRow | StepWrite, ...] = tuple(mapped.steps) if steps is None else tuple(steps)
        if known is not None:  # the upsert left its digests as the store now holds the steps
            return outcome, StoredSteps(known.digests, rows, turns)
        return outcome, StoredSteps({row.id: row.digest for row in rows}, rows, turns)

    def _defer_copy(self, location: Location, mapped: MappedSession, now: datetime) -> bool:
        """True when this ingest leaves the open session's copies behind its records (its newest
        copy is recent); remembered in ``behind`` so the capture copies it later. A session
        that ended for good (``Adapter.end_is_final``) is copied at once."""
        if self.raw_copy_seconds <= 0 or ("ended_at" in mapped.session and adapter_of(location).end_is_final):
            return False
        copied = vault.last_copied(self.database, mapped.id)
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
