"""A catch-up stores many sessions per transaction, mapped in line or in mapping processes:
the results, the stored records and every failure are what one session at a time gives."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from pathlib import Path
from typing import Any

import apsw
import psutil
import pytest

from postrun.agents.cline import SessionLocation, list_sessions
from postrun.agents.cline import adapter as mapper
from postrun.errors import Forgotten, NotParseableYet, SourceError
from postrun.ingest import batches as catchup
from postrun.ingest import pool
from postrun.ingest.batches import ingest_all, ingest_targets
from postrun.ingest.ingester import Ingester, IngestFailure, IngestOutcome
from postrun.ingest.pool import Processes
from postrun.ingest.prepare import Known, MapRules
from postrun.store.db import Database
from postrun.store.forget import forget_sessions
from tests.reliability.kit import Synthetic, differences, read_records, store_problems, synthetic_id, write_synthetic
from tests.support.processes import mapping_processes

MAX_BYTES = 64 * 2**20
COUNT = 8
LIMIT = 30_000  # SQLite's largest value here: the big session's record is beyond it


def history(root: Path) -> None:
    """``COUNT`` sessions; the third is torn (caught mid-write), the fifth too large for the store."""
    for index in range(COUNT):
        session = Synthetic(synthetic_id(index), seed=index)
        for _ in range(5):
            session.grow()
        if index == 4:
            session.messages[-1]["content"][0]["content"][0]["result"] = os.urandom(40_000).hex()
        session.write(root)
        if index == 2:
            messages = root / session.session_id / f"{session.session_id}.messages.json"
            messages.write_bytes(messages.read_bytes()[:200])


def run(
    root: Path, db: Path, commits: list[int] | None = None, *, refuse_commit: bool = False, processes: int = 0
) -> list[IngestOutcome | IngestFailure]:
    with Database.open(db) as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        if commits is not None:

            def count() -> bool:
                commits.append(1)
                return refuse_commit  # True: SQLite turns the commit into a rollback

            database.connection.set_commit_hook(count)
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(processes, from_sessions=4))
        results = list(ingest_all(ingester, list_sessions(root).sessions))
    assert mapping_processes() == []  # every one ended with the catch-up
    return results


def one_at_a_time(root: Path, db: Path) -> dict[str, object]:
    """The reference: each session on its own, in its own transaction, mapped here."""
    with Database.open(db) as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        store = Ingester(database, max_bytes=MAX_BYTES)
        for location in list_sessions(root).sessions:
            with contextlib.suppress(SourceError):
                store.ingest(location)
    return read_records(db)


def summary(results: list[IngestOutcome | IngestFailure]) -> list[tuple[object, ...]]:
    return [
        (r.session_id, r.status, r.steps, r.rows_written)
        if isinstance(r, IngestOutcome)
        else (r.session_id, type(r.error).__name__, str(r.error))
        for r in results
    ]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 60.0)  # one transaction however loaded the machine
    monkeypatch.setattr(catchup, "TAIL_SHARE", 0.0)  # and none committed early for a small last one
    folder = tmp_path / "cline" / "sessions"
    history(folder)
    return folder


@pytest.mark.parametrize("processes", [0, 2])
def test_failing_sessions_lose_none_of_the_others_in_their_transaction(
    root: Path, tmp_path: Path, processes: int
) -> None:
    commits: list[int] = []
    results = run(root, tmp_path / "batched.db", commits, processes=processes)
    assert [r.session_id for r in results] == [synthetic_id(i) for i in range(COUNT)]
    failures = {r.session_id: r.error for r in results if isinstance(r, IngestFailure)}
    assert isinstance(failures.pop(synthetic_id(2)), NotParseableYet)
    assert "too large for the store" in str(failures.pop(synthetic_id(4)))
    assert failures == {}
    assert len(commits) == 1  # all of them in one transaction
    assert store_problems(tmp_path / "batched.db") == []
    reference = one_at_a_time(root, tmp_path / "reference.db")
    assert len(reference) == COUNT - 2
    assert differences(read_records(tmp_path / "batched.db"), reference) == []
    # A second ingest writes nothing.
    again = run(root, tmp_path / "batched.db", processes=processes)
    assert {r.status for r in again if isinstance(r, IngestOutcome)} == {"unchanged"}


@pytest.mark.parametrize("processes", [1, 3])
def test_mapping_processes_give_what_mapping_in_line_gives(root: Path, tmp_path: Path, processes: int) -> None:
    apart = run(root, tmp_path / "apart.db", processes=processes)
    in_line = run(root, tmp_path / "in-line.db")
    assert summary(apart) == summary(in_line)
    assert differences(read_records(tmp_path / "apart.db"), read_records(tmp_path / "in-line.db")) == []


def test_a_mapping_process_that_dies_loses_no_session(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed mid-catch-up (out of memory, by hand): what it had not given back is mapped in line."""
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 0.0)  # each session reported as it is stored
    db = tmp_path / "killed.db"
    with Database.open(db) as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(2, from_sessions=4))
        results = ingest_all(ingester, list_sessions(root).sessions)
        first = next(results)
        started = mapping_processes()
        assert len(started) == 2
        for process in started:
            process.kill()
        psutil.wait_procs(started, timeout=30)
        killed = [first, *results]
    assert mapping_processes() == []
    in_line = run(root, tmp_path / "in-line.db")
    assert summary(killed) == summary(in_line)
    assert differences(read_records(db), read_records(tmp_path / "in-line.db")) == []
    assert store_problems(db) == []


@pytest.mark.parametrize("processes", [0, 1])
def test_the_store_is_asked_of_each_session_once_as_it_is_taken(root: Path, tmp_path: Path, processes: int) -> None:
    """Not of every session before the first is prepared: the first a process is given waits for
    no other session's lookup."""
    locations = list_sessions(root).sessions
    asked: list[str] = []

    def known_of(session_id: str) -> Known:
        asked.append(session_id)
        return Known(None)

    db = tmp_path / "asked.db"
    Database.open(db).close()
    wanted = Processes(processes, from_sessions=2)
    with pool.prepared(locations, known_of, lambda _: {}, MapRules(MAX_BYTES), processes=wanted, store=db) as results:
        next(results)
        assert 1 <= len(asked) < len(locations)
        assert len(list(results)) == len(locations) - 1
    assert sorted(asked) == sorted(location.session_id for location in locations)  # each once
    assert mapping_processes() == []


def test_few_large_sessions_are_prepared_in_processes_and_stored_as_in_line(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few sessions of much source start the processes as many sessions do (by bytes, not by
    count), and store what preparing them in line stores."""
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 0.0)  # each session reported as it is stored
    sessions = list_sessions(root).sessions[:3]
    source = sum(pool.source_bytes(location) for location in sessions)
    db = tmp_path / "by-bytes.db"
    with Database.open(db) as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        processes = Processes(2, from_sessions=200, from_bytes=source)
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=processes)
        results = ingest_all(ingester, sessions)
        first = next(results)
        assert len(mapping_processes()) == 2
        apart = [first, *results]
    assert mapping_processes() == []
    with Database.open(tmp_path / "in-line.db") as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        in_line = list(ingest_all(Ingester(database, max_bytes=MAX_BYTES), sessions))
    assert summary(apart) == summary(in_line)
    assert differences(read_records(db), read_records(tmp_path / "in-line.db")) == []
    # Less source than that, as few sessions: prepared in line.
    with Database.open(tmp_path / "small.db") as database:
        small = Processes(2, from_sessions=200, from_bytes=source + 1)
        results = ingest_all(Ingester(database, max_bytes=MAX_BYTES, mapping_processes=small), sessions)
        next(results)
        assert mapping_processes() == []
        list(results)


def prepared_here_while_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Twelve sessions ingested with one process, stopped from its start until the writer has
    nothing left to do but wait for it (as slow to start as a loaded machine makes it): the
    sessions the writer prepared itself meanwhile. Every session is reported in order, and
    stored as preparing all in line stores them."""
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 60.0)
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 12, grows=3)
    real_init = pool._Pool.__init__
    stopped: list[psutil.Process] = []
    in_line_here: list[str] = []
    while_stopped: list[str] = []

    def stopped_at_start(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        stopped.extend(psutil.Process(process.pid) for process in self.processes)
        for process in stopped:
            process.suspend()

    real_wait = pool.wait

    def resumed_once_waited_for(connections: Any) -> Any:
        if not while_stopped:
            while_stopped.extend(in_line_here)
            for process in stopped:
                process.resume()
        return real_wait(connections)

    monkeypatch.setattr(pool._Pool, "__init__", stopped_at_start)
    monkeypatch.setattr(pool, "wait", resumed_once_waited_for)
    real_prepare = pool.prepare_location

    def counted(location: Any, *args: Any) -> Any:
        in_line_here.append(location.session_id)
        return real_prepare(location, *args)

    monkeypatch.setattr(pool, "prepare_location", counted)
    with Database.open(tmp_path / "helped.db") as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(1, from_sessions=2))
        helped = list(ingest_all(ingester, list_sessions(root).sessions))
    assert len(stopped) == 1
    assert [r.session_id for r in helped] == [synthetic_id(i) for i in range(12)]
    with Database.open(tmp_path / "in-line.db") as database:
        in_line = list(ingest_all(Ingester(database, max_bytes=MAX_BYTES), list_sessions(root).sessions))
    assert summary(helped) == summary(in_line)
    assert differences(read_records(tmp_path / "helped.db"), read_records(tmp_path / "in-line.db")) == []
    return while_stopped


def test_the_writer_prepares_sessions_while_its_processes_do_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "_AHEAD", 6)  # sessions given to a process ahead of the writer
    # Session 0 went to the process, with the five after it; the writer took all the others.
    assert prepared_here_while_stopped(tmp_path, monkeypatch) == [synthetic_id(i) for i in range(6, 12)]


def test_a_process_is_given_so_many_bytes_ahead_not_a_run_of_large_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few sessions of much source each: a process is given as much source ahead as of many small
    ones, and the writer takes its share of the rest (given a count of sessions, the process had
    them all)."""
    monkeypatch.setattr(pool, "_AHEAD_BYTES", 1)  # every session is more: one given at a time
    # Session 0 went to the process; the writer took all the others.
    assert prepared_here_while_stopped(tmp_path, monkeypatch) == [synthetic_id(i) for i in range(1, 12)]


def test_the_writer_stores_what_it_prepared_without_waiting_for_earlier_sessions(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer holds no session it prepared until an earlier one's turn: with its process
    stopped, the sessions it prepared itself are stored and committed first, and the process's
    once it answers; ``ingest_all`` still reports them in order."""
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 0.0)  # each session its own batch
    monkeypatch.setattr(pool, "_AHEAD", 2)
    real_init = pool._Pool.__init__
    stopped: list[psutil.Process] = []

    def stopped_at_start(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        stopped.extend(psutil.Process(process.pid) for process in self.processes)
        for process in stopped:
            process.suspend()

    monkeypatch.setattr(pool._Pool, "__init__", stopped_at_start)
    with Database.open(tmp_path / "ahead.db") as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(1, from_sessions=4))
        batches = catchup.committed_batches(ingester, list_sessions(root).sessions)
        first = [position for results in itertools.islice(batches, COUNT - 2) for position, _ in results]
        assert first == list(range(2, COUNT))  # stored while sessions 0 and 1 wait for their process
        for process in stopped:
            process.resume()
        rest = [position for results in batches for position, _ in results]
    assert rest == [0, 1]
    assert mapping_processes() == []
    assert differences(read_records(tmp_path / "ahead.db"), one_at_a_time(root, tmp_path / "reference.db")) == []


def test_a_bug_met_mapping_one_session_is_that_sessions_failure_alone(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = mapper.map_session

    def fails_on_the_sixth(files: Any, *args: Any) -> Any:
        if files.location.session_id == synthetic_id(5):
            raise KeyError("a bug")
        return real(files, *args)

    monkeypatch.setattr(mapper, "map_session", fails_on_the_sixth)
    db = tmp_path / "bug.db"
    results = run(root, db)
    failures = {r.session_id: str(r.error) for r in results if isinstance(r, IngestFailure)}
    assert failures.pop(synthetic_id(5)).endswith("internal error: KeyError: 'a bug'")
    assert set(failures) == {synthetic_id(2), synthetic_id(4)}
    assert len(read_records(db)) == COUNT - 3  # the others of its transaction are kept
    assert store_problems(db) == []


def test_a_long_catch_up_commits_as_it_goes(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 0.0)
    commits: list[int] = []
    results = run(root, tmp_path / "each.db", commits)
    assert len(commits) == COUNT  # every session's own transaction
    assert sum(isinstance(r, IngestOutcome) for r in results) == COUNT - 2


def test_a_transaction_that_cannot_commit_reports_every_session_it_held(root: Path, tmp_path: Path) -> None:
    db = tmp_path / "refused.db"
    results = run(root, db, [], refuse_commit=True)
    assert not any(isinstance(r, IngestOutcome) for r in results)
    *sessions, store = results
    assert [r.session_id for r in sessions] == [synthetic_id(2), synthetic_id(4)]  # their own failures
    assert store.session_id is None
    assert str(store.error).endswith(f"; {COUNT - 2} session(s) of the same transaction rolled back, not stored")
    assert read_records(db) == {}
    assert store_problems(db) == []


def test_a_forgotten_session_of_a_catch_up_is_not_recorded_unless_forced(root: Path, tmp_path: Path) -> None:
    db = tmp_path / "forgot.db"
    run(root, db)
    forgotten = synthetic_id(1)
    with Database.open(db) as database:
        forget_sessions(database, [forgotten], now="2026-11-29T12:00:00.000Z")
    report = ingest_targets([str(root)], db=db, default_root=root, max_bytes=MAX_BYTES)
    assert [(type(e), e.where) for e in report.not_recorded] == [(Forgotten, forgotten)]
    assert forgotten not in read_records(db) and len(report.outcomes) == COUNT - 2
    forced = ingest_targets([str(root)], db=db, default_root=root, max_bytes=MAX_BYTES, force=True)
    assert [o.session_id for o in forced.outcomes if o.revived] == [forgotten]
    assert forgotten in read_records(db) and store_problems(db) == []


def idle(process: psutil.Process) -> None:
    """Wait until ``process`` waits for work: its CPU time unchanged over a tenth of a second."""
    deadline = time.monotonic() + 30
    spent = None
    while (now := process.cpu_times()) != spent or process.status() != psutil.STATUS_SLEEPING:
        assert time.monotonic() < deadline, "the mapping process never went idle"
        spent = now
        time.sleep(0.1)


def test_a_session_stored_by_someone_else_between_two_batches_is_read_again(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capture's live work between two batches of its catch-up: what the mapping process mapped
    ahead of a session changed meanwhile is older than what the store holds, and is not stored."""
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 0.0)  # each session its own batch
    db = tmp_path / "live.db"
    later = synthetic_id(1)  # sent to the mapping process with the first session
    with Database.open(db) as database:
        database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, LIMIT)
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(1, from_sessions=4))
        batches = catchup.committed_batches(ingester, list_sessions(root).sessions)
        (first,) = next(batches)  # the process's first session, or the writer's own meanwhile
        assert first[1].session_id != later
        (process,) = mapping_processes()
        idle(process)  # it mapped every session it was sent, ``later`` included
        grown = Synthetic(later, seed=6)
        for _ in range(8):
            grown.grow()
        grown.write(root)
        live, _ = ingester.ingest(SessionLocation.in_root(root, later), live=True)  # the live work
        assert live.status == "ingested"  # not stored yet by the catch-up
        rest = [result for results in batches for _, result in results]
    assert mapping_processes() == []
    assert {r.session_id: r.status for r in rest if isinstance(r, IngestOutcome)}[later] == "unchanged"
    assert differences(read_records(db), one_at_a_time(root, tmp_path / "reference.db")) == []
    assert store_problems(db) == []
