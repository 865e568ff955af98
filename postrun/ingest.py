"""Ingesting sessions: read an agent's files, map them to v1.2 records, validate, store.

The one place where adapter, validation and store meet; ``postrun ingest`` and
the capture both come through here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

import apsw

from postrun.agents.cline import (
    MappingCache,
    SessionLocation,
    Skipped,
    parse_session,
    read_session,
    resolve_targets,
    snapshot_from_settings,
)
from postrun.agents.cline.locate import MESSAGES_SUFFIX
from postrun.errors import (
    Forgotten,
    NotFound,
    NotParseableYet,
    NotRecorded,
    PostrunError,
    SourceError,
    StoreError,
)
from postrun.mapper import (
    Known,
    MapRules,
    Prepared,
    Processes,
    internal_error,
    map_files,
    mapped_in_order,
    prepare,
)
from postrun.records import MappedSession, RawFile
from postrun.review.apply import FlagMemo, flag_session
from postrun.review.exclude import Exclusions
from postrun.review.flags import RULES_VERSION
from postrun.store import vault
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.flags import set_rules_version, stored_rules_version
from postrun.store.forget import is_forgotten, lift_tombstone, tombstone_ids
from postrun.store.remap import session_ids, stored_mapped_session
from postrun.store.write import StoredState, UpsertResult, stored_state, upsert_session
from postrun.timestamps import utc_iso

_NOW_UTC: Callable[[], datetime] = functools.partial(datetime.now, UTC)
_T = TypeVar("_T")
# A catch-up stores many sessions per transaction (one commit, and one flush of the search
# index, per batch instead of per session), committed after this long or this much source:
# the batch holds the store's write lock, and another writer waits at most the busy timeout.
BATCH_SECONDS = 0.5
BATCH_SOURCE_BYTES = 64 * 2**20


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


@dataclass(frozen=True)
class IngestReport:
    outcomes: list[IngestOutcome] = field(default_factory=list)
    failures: list[IngestFailure] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how targets were taken (see ``Listing.notes``)
    not_recorded: list[NotRecorded] = field(default_factory=list)  # forgotten or excluded: not failures
    reflagged: int = 0  # stored sessions re-flagged first, because the rules changed


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
        self.mapping_processes = mapping_processes  # for ``ingest_all``'s catch-ups (see ``mapped_in_order``)
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
        forgotten = self._read(lambda database: is_forgotten(database, session_id))
        if forgotten and not force:
            raise _forgotten(session_id)
        known = cache.transcript.layout if cache is not None and cache.transcript is not None else None
        files = read_session(location, max_bytes=self.max_bytes, known=known)
        helpers = StoredHelpers(self.database, session_id)
        prepared, cache = prepare(files, self._stored_approvals(session_id), helpers, self.rules, cache)
        outcome = self._store(location, prepared, started, live=live)
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
            state = self._stored_state(session_id)
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
            return self._store(location, prepared, started)

    def _vault_copies(self, session_id: str, paths: set[str]) -> list[RawFile]:
        """The vault's newest copies of files that could not be read this time: they stay the
        newest, as the records mapped from them stay stored."""
        try:
            versions = vault.kept_versions(self.database, session_id)
            kept = [f for f in versions[-1].files if f.fingerprint.path in paths] if versions else []
            return [RawFile(f.name, vault.read_blob(self.database, f.hash), f.fingerprint, f.settings) for f in kept]
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None

    def _stored_state(self, session_id: str) -> StoredState | None:
        return self._read(lambda database: stored_state(database, session_id))

    def _stored_approvals(self, session_id: str) -> dict[str, Any] | None:
        state = self._stored_state(session_id)
        return None if state is None else state.approvals

    def _store(
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
            state = self._stored_state(session_id)
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
        copied = self._read(lambda database: vault.last_copied(database, mapped.id))
        # Compressing a large transcript again after every message costs more than all the
        # rest of its re-ingest: a copy at most every ``raw_copy_seconds`` while it is written.
        if copied is None or self._due(copied, now):
            return False
        self.behind[mapped.id] = copied
        return True

    def ingest_all(
        self, locations: Sequence[SessionLocation], *, force: bool = False
    ) -> Iterator[IngestOutcome | IngestFailure]:
        """Ingest every session of ``locations``, in order, many per transaction (``force``:
        forgotten ones too).

        Each session is all or nothing on its own (a savepoint): one that fails is rolled
        back alone and the others of its transaction are kept. Results come out in order,
        once the transaction holding them committed; a session not recorded (forgotten,
        excluded) is a failure whose error is NotRecorded. A store fault (locked, full,
        broken) stops the run: its failure names how many sessions were not stored, those
        of the rolled-back transaction included.
        """
        batch = _Batch(self.database, self.timer)
        position = 0  # of the next session to store
        with collector_paused():
            try:
                forgotten = set(self._read(tombstone_ids))
                with (
                    contextlib.closing(Database.open_reader(self.database.path)) as reader,
                    mapped_in_order(
                        locations,
                        lambda session_id: self._known(session_id, session_id in forgotten and not force),
                        lambda session_id: StoredHelpers(reader, session_id),
                        self.rules,
                        processes=self.mapping_processes,
                        store=self.database.path,
                    ) as results,
                ):
                    for location, mapped, mapped_ms in results:
                        batch.open()
                        batch.results.append(self._store_mapped(location, mapped, mapped_ms, force))
                        if isinstance(mapped, Prepared):
                            batch.source_bytes += sum(f.size for f in mapped.mapped.source_files)
                        position += 1
                        if batch.full():
                            yield from batch.commit()
                    yield from batch.commit()
            except StoreError as exc:
                yield from self._stopped(exc, locations, position, batch)
            finally:
                batch.roll_back()  # after any other error too: never leave the transaction open

    def _read(self, read: Callable[[Database], _T]) -> _T:
        """What ``read`` reads from the store; its SQLite errors as the store's."""
        try:
            return read(self.database)
        except apsw.Error as exc:
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None

    def _known(self, session_id: str, refused: bool) -> Known:
        if refused:
            return Known(None, _forgotten(session_id))
        return Known(self._stored_approvals(session_id))

    def _stopped(
        self, exc: StoreError, locations: Sequence[SessionLocation], position: int, batch: _Batch
    ) -> Iterator[IngestFailure]:
        """A store fault: every other session would fail the same way (each after the busy
        timeout), so stop, and say how many were not tried and how many the rolled-back
        transaction held."""
        pending = batch.roll_back()
        yield from (result for result in pending if isinstance(result, IngestFailure))
        lost = sum(isinstance(result, IngestOutcome) for result in pending)
        failed = locations[position].session_id if position < len(locations) else None
        untried = len(locations) - position - (failed is not None)
        reason = exc.reason
        if untried:
            reason += f"; {untried} more session(s) not tried"
        if lost:
            reason += f"; {lost} session(s) of the same transaction rolled back, not stored"
        yield IngestFailure(failed, type(exc)(exc.where, reason))

    def _store_mapped(
        self, location: SessionLocation, mapped: Prepared | PostrunError, mapped_ms: float, force: bool
    ) -> IngestOutcome | IngestFailure:
        """Store what ``mapped_in_order`` gave; a session's own failure is kept as a result."""
        started = self.timer() - mapped_ms / 1000
        session_id = location.session_id
        try:
            if isinstance(mapped, PostrunError):
                raise mapped
            forgotten = self._read(lambda database: is_forgotten(database, session_id))
            if forgotten and not force:
                raise _forgotten(session_id)  # forgotten since the run began
            stored = self._stored_approvals(session_id)
            if stored is not None and stored != mapped.mapped.approvals:
                # Stored by someone else since it was mapped: its steps' decisions follow
                # the snapshot the store kept.
                files = read_session(location, max_bytes=self.max_bytes)
                mapped, _ = prepare(files, stored, StoredHelpers(self.database, session_id), self.rules)
            outcome = self._store(location, mapped, started)
            if forgotten:
                outcome = replace(outcome, revived=lift_tombstone(self.database, session_id))
            return outcome
        except StoreError:
            raise
        except PostrunError as exc:
            return IngestFailure(session_id, exc)
        except Exception as exc:  # noqa: BLE001 - one bad session never stops the others
            # Its savepoint was rolled back; the failure names the session.
            return IngestFailure(session_id, internal_error(location, exc))


def _forgotten(session_id: str) -> Forgotten:
    return Forgotten(session_id, "forgotten (postrun forget); `postrun ingest --force` brings it back")


class _Batch:
    """Sessions stored in one transaction, reported once it committed."""

    def __init__(self, database: Database, timer: Callable[[], float]) -> None:
        self.database = database
        self.timer = timer
        self.results: list[IngestOutcome | IngestFailure] = []
        self.source_bytes = 0
        self._started: float | None = None
        self._transaction = contextlib.ExitStack()

    def open(self) -> None:
        if self._started is None:
            try:
                self._transaction.enter_context(self.database.transaction())
            except apsw.Error as exc:
                raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
            self._started = self.timer()

    def full(self) -> bool:
        return self._started is not None and (
            self.timer() - self._started >= BATCH_SECONDS or self.source_bytes >= BATCH_SOURCE_BYTES
        )

    def commit(self) -> list[IngestOutcome | IngestFailure]:
        if self._started is not None:
            self._started = None
            self.source_bytes = 0
            try:
                self._transaction.close()
            except apsw.Error as exc:
                raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        results, self.results = self.results, []
        return results

    def roll_back(self) -> list[IngestOutcome | IngestFailure]:
        """Abandon the transaction (SQLite may have rolled it back already); the results it
        held (its outcomes are now not stored)."""
        results, self.results = self.results, []
        if self._started is not None:
            self._started = None
            failure = StoreError(str(self.database.path), "rolled back")
            with contextlib.suppress(apsw.Error, StoreError):
                self._transaction.__exit__(StoreError, failure, None)
        return results


def ingest_targets(
    targets: Sequence[str],
    *,
    db: Path,
    default_root: Path,
    max_bytes: int,
    keep_raw: bool = True,
    exclusions: Exclusions | None = None,
    force: bool = False,
    progress: Progress | None = None,
    processes: int | None = None,
) -> IngestReport:
    """``postrun ingest TARGET...``: every session the targets name, each on its own.

    A target that names no session and a session that cannot be stored are failures of
    their own; the others are stored. The store is opened (created) only when there is a
    session to store. ``force`` records forgotten sessions again. ``processes``: how many
    map them (``Processes.wanted``).
    """
    listing = resolve_targets(targets, default_root)
    report = IngestReport(
        skipped=list(listing.skipped),
        failures=[IngestFailure(None, failure) for failure in listing.failures],
        notes=list(listing.notes),
    )
    if not listing.sessions:
        return report
    with Database.open(db) as database:
        ingester = Ingester(
            database,
            max_bytes=max_bytes,
            keep_raw=keep_raw,
            exclusions=exclusions,
            mapping_processes=Processes.wanted(processes),
        )
        try:
            reflagged = refresh_flags(database, now=_NOW_UTC(), captured_on=ingester.hostname, progress=progress)
        except apsw.Error as exc:
            raise StoreError(str(database.path), describe_sqlite_error(exc)) from None
        report = replace(report, reflagged=reflagged)
        for result in ingester.ingest_all(listing.sessions, force=force):
            if isinstance(result, IngestOutcome):
                report.outcomes.append(result)
            elif isinstance(result.error, NotRecorded):
                report.not_recorded.append(result.error)
            else:
                report.failures.append(result)
    return report
