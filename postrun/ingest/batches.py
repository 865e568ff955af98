"""A batched ingest: many sessions stored many to a transaction, prepared in line or in ingest processes.

``postrun ingest`` of its targets and capture's start-up catch-up both come through here. Each
session is all or nothing on its own (a savepoint): one that fails is rolled back alone and
the others of its transaction are kept. Sessions are stored as they are prepared (in ingest
processes and by the writer, so not always in order); results come out once the transaction
holding them committed, a batch at a time, each with the index of its session, so whoever
runs a batched ingest may do other work between two batches (capture ingests a live session
there) and then take the next one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import apsw

from postrun.agents.registry import Location, Skipped, adapter, default_kind
from postrun.errors import Excluded, NotRecorded, PostrunError, StoreError
from postrun.ingest.ahead import Ahead
from postrun.ingest.guard import forgotten_refusal
from postrun.ingest.ingester import Ingester, IngestFailure, IngestOutcome, Progress, collector_paused, goes_on
from postrun.ingest.pool import Processes, prepared
from postrun.ingest.prepare import Known, Prepared, internal_error
from postrun.ingest.reflag import refresh_flags
from postrun.ingest.shared import Shared
from postrun.review.exclude import Exclusions
from postrun.store import dictionary
from postrun.store.actors import StoredHelpers
from postrun.store.checkpoints import Checkpoints, checkpointed_beside
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.forget import tombstone_kinds
from postrun.store.scrub import finish_pending
from postrun.store.write import StoredState

# A batched ingest stores many sessions per transaction (one commit, and one flush of the search
# index, per batch instead of per session), committed after this long or this much source:
# the batch holds the store's write lock, and another writer waits at most the busy timeout.
BATCH_SECONDS = 0.5
BATCH_SOURCE_BYTES = 64 * 2**20
# The last transaction's pages are checkpointed once the work is done, with nothing left to do
# meanwhile (the thread of ``checkpointed_beside`` copies each committed transaction while the
# next is stored): the one before it commits early, once the sessions left are at most this
# share of those it holds, so that the last stays small (the large and mix slices' cold ingest
# 2 % faster, the small slice's the same).
TAIL_SHARE = 0.2

Result = IngestOutcome | IngestFailure
Placed = tuple[int, Result]  # a result, and the index of its session among those given


@contextlib.contextmanager
def _store_fault(database: Database) -> Iterator[None]:
    """SQLite failing a savepoint (or its release) is a store fault."""
    try:
        yield
    except apsw.Error as exc:
        raise StoreError(str(database.path), describe_sqlite_error(exc)) from None


class BatchesStopped(Exception):
    """A store fault (locked, full, broken) stopped the batched ingest: every other session would fail
    the same way, each after the busy timeout.

    ``failures`` are the sessions of the rolled-back transaction that failed on their own;
    ``rolled_back`` counts those it had stored, now not stored; ``failed`` is the session whose
    store failed (None: the commit); ``untried``, how many sessions were not stored at all."""

    def __init__(
        self, error: StoreError, failures: list[Placed], rolled_back: int, failed: str | None, untried: int
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.failures = failures
        self.rolled_back = rolled_back
        self.failed = failed
        self.untried = untried


def committed_batches(
    ingester: Ingester,
    locations: Sequence[Location],
    *,
    force: bool = False,
    keep_cache: Callable[[str, Any], None] | None = None,
) -> Generator[list[Placed], None, None]:
    """Store every session of ``locations``, many per transaction (``force``: forgotten ones
    too); yields the results of each transaction once it committed (no transaction is open while
    the caller holds one), each with its session's index. A session not recorded (forgotten,
    excluded) is a failure whose error is NotRecorded. Raises BatchesStopped at a store fault.

    A session stored by someone else since the batched ingest began (capture's live work between
    two batches, say) is read again as it is stored (``Ingester.store``'s guard): what was
    mapped of it may be older than what the store holds now. ``keep_cache`` is given the
    mapping cache of each session stored that may be written again (``goes_on``) and was mapped in line (one mapped in a
    process leaves none).
    """
    batch = _Batch(ingester.database, ingester.timer, keep_cache)
    handled = 0  # sessions stored or failed, their transaction committed or not
    storing: str | None = None  # the session being stored
    stored_before: dict[str, StoredState | None] = {}

    def known(session_id: str) -> Known:
        if session_id in forgotten and not force:
            return Known(None, forgotten_refusal(session_id, forgotten[session_id]))
        state = stored_before[session_id] = ingester.stored_state(session_id)
        return Known(None if state is None else state.approvals)

    try:
        forgotten = ingester.read(tombstone_kinds)
        with (
            checkpointed_beside(ingester.database) as checkpoints,
            contextlib.closing(Database.open_reader(ingester.database.path)) as reader,
            prepared(
                locations,
                known,
                lambda session_id: StoredHelpers(reader, session_id),
                ingester.rules,
                processes=ingester.mapping_processes,
                store=ingester.database.path,
            ) as results,
        ):
            batch.checkpoints = checkpoints
            for position, (location, mapped, mapped_ms) in results:
                storing = location.session_id  # its transaction failing to begin is its store failing too
                batch.open()
                before = stored_before.pop(location.session_id, None)
                size = sum(f.size for f in mapped.mapped.source_files) if isinstance(mapped, Prepared) else 0
                attempt = functools.partial(
                    _store_mapped, ingester, location, mapped, mapped_ms, before, force, keep_cache is not None
                )
                batch.store(position, location.session_id, size, attempt)
                storing = None
                handled += 1
                batch.settle()
                if batch.full(left=len(locations) - handled):
                    yield batch.commit()
            last = batch.commit()
            if last:
                yield last
    except StoreError as exc:
        pending = batch.roll_back()
        failures: list[Placed] = [placed for placed in pending if isinstance(placed[1], IngestFailure)]
        untried = len(locations) - handled - (storing is not None)
        failed = storing if storing is not None else batch.storing_again
        raise BatchesStopped(exc, failures, len(pending) - len(failures), failed, untried) from None
    finally:
        batch.roll_back()  # after any other error too: never leave the transaction open


def ingest_all(ingester: Ingester, locations: Sequence[Location], *, force: bool = False) -> Iterator[Result]:
    """Every session's result of ``committed_batches``, in the order of ``locations``. A store
    fault stops the run: its failure names how many sessions were not stored, those of the
    rolled-back transaction included."""
    held: dict[int, Result] = {}  # committed, waiting for an earlier session's result
    following = 0  # the index of the next result to give

    def in_order(placed: Sequence[Placed]) -> Iterator[Result]:
        nonlocal following
        held.update(placed)
        while following in held:
            yield held.pop(following)
            following += 1

    with collector_paused():
        try:
            for results in committed_batches(ingester, locations, force=force):
                yield from in_order(results)
        except BatchesStopped as stop:
            held.update(stop.failures)
            yield from (held[position] for position in sorted(held))
            reason = stop.error.reason
            if stop.untried:
                reason += f"; {stop.untried} more session(s) not tried"
            if stop.rolled_back:
                reason += f"; {stop.rolled_back} session(s) of the same transaction rolled back, not stored"
            yield IngestFailure(stop.failed, type(stop.error)(stop.error.where, reason))


@dataclass(frozen=True, slots=True)
class _Stored:
    result: Result
    cache: tuple[str, Any] | None = None  # a session id and its mapping cache, to keep once committed


def _store_mapped(
    ingester: Ingester,
    location: Location,
    mapped: Prepared | PostrunError,
    mapped_ms: float,
    before: StoredState | None,
    force: bool,
    wants_cache: bool,
) -> _Stored:
    """Store what ``prepared`` gave (``before``: what the store held when it was
    mapped); a session's own failure is kept as a result. ``wants_cache``: give back the mapping
    cache of a session that may be written again (``goes_on``)."""
    started = ingester.timer() - mapped_ms / 1000
    session_id = location.session_id
    try:
        if isinstance(mapped, Excluded):
            raise ingester.drop_excluded(mapped)
        if isinstance(mapped, PostrunError):
            raise mapped
        outcome = ingester.store(location, mapped, started, force=force, basis=before)
        cache = ingester.fresh_caches.pop(session_id, mapped.cache)
        kept = wants_cache and goes_on(location, outcome) and cache is not None
        return _Stored(outcome, (session_id, cache) if kept else None)
    except StoreError:
        raise
    except PostrunError as exc:
        return _Stored(IngestFailure(session_id, exc))
    except Exception as exc:  # noqa: BLE001 - one bad session never stops the others
        # Its part was rolled back; the failure names the session.
        return _Stored(IngestFailure(session_id, internal_error(location, exc)))


class _Batch:
    """Sessions stored in one transaction (a few at a time under one savepoint: ``Shared``),
    reported once it committed."""

    def __init__(
        self, database: Database, timer: Callable[[], float], keep_cache: Callable[[str, Any], None] | None
    ) -> None:
        self.database = database
        self.timer = timer
        self.keep_cache = keep_cache
        self.results: list[Placed] = []
        self.source_bytes = 0
        self.sessions = 0  # stored in the open transaction, their results settled or not
        self._shared: Shared[_Stored] = Shared(database)
        self.checkpoints: Checkpoints | None = None  # told when each transaction begins and ends
        self._started: float | None = None
        self._had_dictionary = False  # whether the vault held a dictionary as the transaction began
        self._tail = False  # whether a transaction committed early for the last one to be small
        self._transaction = contextlib.ExitStack()

    def open(self) -> None:
        if self._started is None:
            try:
                self._transaction.enter_context(self.database.transaction())
            except apsw.Error as exc:
                raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
            if self.checkpoints is not None:
                self.checkpoints.begun()
            self._started = self.timer()
            self._had_dictionary = dictionary.newest_id(self.database.connection) is not None

    def store(self, position: int, session_id: str, source_bytes: int, attempt: Callable[[], _Stored]) -> None:
        """Store a session in the open transaction (``attempt``, which may be called again)."""
        with _store_fault(self.database):
            self._shared.store(position, session_id, source_bytes, attempt)
        self.source_bytes += source_bytes
        self.sessions += 1

    @property
    def storing_again(self) -> str | None:
        """The session whose store was being done again on its own (see ``Shared``)."""
        return self._shared.storing_again

    def settle(self) -> None:
        """End the shared savepoint when it is due: its sessions' results are then the batch's."""
        if self._shared.due():
            self._settled()

    def _settled(self) -> None:
        with _store_fault(self.database):
            for position, stored in self._shared.ended():
                self.results.append((position, stored.result))
                if stored.cache is not None and self.keep_cache is not None:
                    self.keep_cache(*stored.cache)

    def full(self, *, left: int) -> bool:
        """Whether the open transaction commits now, ``left`` sessions still to store."""
        if self._started is None:
            return False
        # Also once the vault cut a dictionary: ingest processes read it only once it is
        # committed, and compress every copy without it until then (on 400 one-turn sessions,
        # 0.164 MB of copies per source MB with the batch left to run, 0.152 committed at once).
        # One is cut only while the store has none, so only then is it looked for.
        if (
            self.timer() - self._started >= BATCH_SECONDS
            or self.source_bytes >= BATCH_SOURCE_BYTES
            or (not self._had_dictionary and dictionary.newest_id(self.database.connection) is not None)
        ):
            return True
        if left and not self._tail and self.checkpoints is not None and left <= TAIL_SHARE * self.sessions:
            self._tail = True
            return True
        return False

    def commit(self) -> list[Placed]:
        if self._started is not None:
            self._settled()
            self._started = None
            self.source_bytes = 0
            self.sessions = 0
            try:
                self._transaction.close()
            except apsw.Error as exc:
                raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
            finally:
                if self.checkpoints is not None:
                    self.checkpoints.ended()
        results, self.results = self.results, []
        return results

    def roll_back(self) -> list[Placed]:
        """Abandon the transaction (SQLite may have rolled it back already); the results it
        held (its outcomes are now not stored)."""
        self.results.extend((position, stored.result) for position, stored in self._shared.abandoned())
        with contextlib.suppress(apsw.Error):
            self._shared.close()
        results, self.results = self.results, []
        if self._started is not None:
            self._started = None
            self.sessions = 0
            failure = StoreError(str(self.database.path), "rolled back")
            with contextlib.suppress(apsw.Error, StoreError):
                self._transaction.__exit__(StoreError, failure, None)
            if self.checkpoints is not None:
                self.checkpoints.ended()
        return results


@dataclass(frozen=True)
class IngestReport:
    outcomes: list[IngestOutcome] = field(default_factory=list)
    failures: list[IngestFailure] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how targets were taken (see ``Listing.notes``)
    not_recorded: list[NotRecorded] = field(default_factory=list)  # forgotten or excluded: not failures
    reflagged: int = 0  # stored sessions re-flagged first, because the rules changed


def ingest_targets(
    targets: Sequence[str],
    *,
    db: Path,
    default_root: Path | Sequence[Path],
    max_bytes: int,
    agent: str | None = None,
    keep_raw: bool = True,
    exclusions: Exclusions | None = None,
    force: bool = False,
    progress: Progress | None = None,
    processes: int | None = None,
    started: Ahead | None = None,
) -> IngestReport:
    """``postrun ingest TARGET...``: every session the targets name, each on its own.

    A target that names no session and a session that cannot be stored are failures of
    their own; the others are stored. The store is opened (created) only when there is a
    session to store. ``agent`` is the kind whose files they are (None: the first registered);
    ``default_root``, where that agent's bare ids are looked up. ``force`` records forgotten
    sessions again. ``processes``: how many ingest processes prepare them (``Processes.wanted``).
    """
    lookup = (default_root,) if isinstance(default_root, Path) else tuple(default_root)
    listing = adapter(agent or default_kind()).resolve_targets(targets, lookup)
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
            mapping_processes=Processes.wanted(processes, started),
        )
        try:
            reflagged = refresh_flags(database, now=ingester.clock(), captured_on=ingester.hostname, progress=progress)
        except apsw.Error as exc:
            raise StoreError(str(database.path), describe_sqlite_error(exc)) from None
        report = replace(report, reflagged=reflagged)
        for result in ingest_all(ingester, listing.sessions, force=force):
            if isinstance(result, IngestOutcome):
                report.outcomes.append(result)
            elif isinstance(result.error, NotRecorded):
                report.not_recorded.append(result.error)
            else:
                report.failures.append(result)
        # A session that turned out excluded was removed: its bytes are scrubbed now.
        _, left = finish_pending(database)
        if left is not None:
            report.notes.append(f"{database.path}: the scrub is not finished: {left.describe()}")
    return report
