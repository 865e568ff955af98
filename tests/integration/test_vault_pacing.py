"""How often a session being written is copied to the vault (``raw_copy_seconds``), on a real store.

A live ingest of an open session copies its files at most every ``raw_copy_seconds``; its
first ingest, its end, any other ingest, the capture's start-up pass and its stop copy them
whenever they changed, so the vault converges on the files' final bytes.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation
from postrun.agents.codex.adapter import CodexSource
from postrun.capture.book import SessionBook, plan_catch_up
from postrun.capture.caches import MappingCaches
from postrun.capture.job import IngestJob
from postrun.capture.scheduler import Due
from postrun.errors import PostrunError
from postrun.ingest.ingester import Ingester
from postrun.store import vault
from postrun.store.db import Database
from postrun.store.write import stored_state
from tests.conftest import FIXTURES
from tests.integration.test_capture_job import Host
from tests.reliability.kit import Synthetic, read_records, synthetic_id
from tests.support.clock import FakeClock

EVERY = 300.0


class WallClock:
    """The ingester's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def database(tmp_path: Path):
    with Database.open(tmp_path / "store" / "postrun.db") as db:
        yield db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "cline" / "sessions"


def kept_messages(database: Database, session_id: str) -> bytes:
    (kept,) = [f for f in vault.kept_versions(database, session_id)[-1].files if f.name.endswith(".messages.json")]
    return vault.read_blob(database, kept.hash)


def messages_file(root: Path, session: Synthetic) -> bytes:
    return (root / session.session_id / f"{session.session_id}.messages.json").read_bytes()


def behind(database: Database, session_id: str) -> bool:
    state = stored_state(database, session_id)
    assert state is not None
    return vault.copies_behind(database, session_id, state.source_files)


def grown(session: Synthetic, root: Path) -> Synthetic:
    session.grow()
    session.write(root)
    return session


def test_live_ingests_of_an_open_session_copy_it_at_most_every_raw_copy_seconds(root: Path, database: Database) -> None:
    clock = WallClock()
    ingester = Ingester(database, max_bytes=2**26, clock=clock, raw_copy_seconds=EVERY)
    session = grown(Synthetic(synthetic_id(1), seed=1), root)
    location = SessionLocation.in_root(root, session.session_id)
    ingester.ingest(location, live=True)  # the first ingest always copies
    first = messages_file(root, session)
    assert kept_messages(database, session.session_id) == first and not behind(database, session.session_id)

    for _ in range(3):
        clock.advance(EVERY / 4)
        grown(session, root)
        outcome, _ = ingester.ingest(location, live=True)
        assert outcome.status == "updated"
    assert kept_messages(database, session.session_id) == first  # the records moved on, the copy did not
    assert behind(database, session.session_id)
    assert ingester.copies_due() == [] and ingester.copies_due(everything=True) == [session.session_id]

    clock.advance(EVERY / 4)
    assert ingester.copies_due() == [session.session_id]
    grown(session, root)
    ingester.ingest(location, live=True)  # its newest copy is EVERY seconds old: copied
    assert kept_messages(database, session.session_id) == messages_file(root, session)
    assert not behind(database, session.session_id) and ingester.copies_due(everything=True) == []
    assert [v.number for v in vault.kept_versions(database, session.session_id)] == [1]  # it only grew


def left_behind(root: Path, database: Database, index: int) -> tuple[Ingester, WallClock, Synthetic, SessionLocation]:
    """A session ingested live twice, a second apart: its copy is of the first version."""
    clock = WallClock()
    ingester = Ingester(database, max_bytes=2**26, clock=clock, raw_copy_seconds=EVERY)
    session = grown(Synthetic(synthetic_id(index), seed=index), root)
    location = SessionLocation.in_root(root, session.session_id)
    ingester.ingest(location, live=True)
    clock.advance(1)
    grown(session, root)
    ingester.ingest(location, live=True)
    assert behind(database, session.session_id)
    return ingester, clock, session, location


def test_an_ending_session_and_ingests_that_are_not_live_are_copied_at_once(root: Path, database: Database) -> None:
    ingester, clock, session, location = left_behind(root, database, 2)
    clock.advance(1)
    ingester.ingest(location)  # `postrun ingest`, a start-up pass: not live
    assert kept_messages(database, session.session_id) == messages_file(root, session)
    clock.advance(1)
    grown(session, root)
    ingester.ingest(location, live=True)
    assert behind(database, session.session_id)
    clock.advance(1)
    session.status = "completed"
    grown(session, root)
    outcome, _ = ingester.ingest(location, live=True)
    assert not outcome.open
    assert kept_messages(database, session.session_id) == messages_file(root, session)
    assert not behind(database, session.session_id) and ingester.copies_due(everything=True) == []


def test_a_codex_thread_between_turns_is_paced_as_an_open_session(tmp_path: Path, database: Database) -> None:
    """A rollout's records end at its last turn's end, but the thread takes its next prompt any
    time: a live ingest of it leaves the copy behind as for an open session (copying the whole
    rollout after each line made a line cost O(file)); a start-up pass copies it at once."""
    real = FIXTURES / "codex-real"
    (first,) = (real / "a_commands" / "sessions").rglob("*.jsonl")
    (other,) = (real / "b_apply_patch" / "sessions").rglob("*.jsonl")
    rollout = tmp_path / "codex" / "sessions" / first.relative_to(real / "a_commands" / "sessions")
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(first.read_bytes())
    source = CodexSource(rollout.parents[3])
    (location,) = source.list().sessions
    clock = WallClock()
    ingester = Ingester(database, max_bytes=2**26, clock=clock, raw_copy_seconds=EVERY)
    outcome, cache = ingester.ingest(location, live=True)
    assert not outcome.open  # its one turn ended
    clock.advance(1)
    with rollout.open("ab") as out:  # the next turn, run to its end
        out.writelines(other.read_bytes().splitlines(keepends=True)[1:])
    outcome, _ = ingester.ingest(location, cache, live=True)
    assert outcome.status == "updated" and not outcome.open
    assert behind(database, location.session_id)
    assert ingester.copies_due(everything=True) == [location.session_id]
    ingester.ingest(location)  # not live
    assert not behind(database, location.session_id)


def test_a_clock_set_back_does_not_hold_the_copy_back(root: Path, database: Database) -> None:
    ingester, clock, session, location = left_behind(root, database, 5)
    clock.advance(-3600)
    assert ingester.copies_due() == [session.session_id]
    grown(session, root)
    ingester.ingest(location, live=True)
    assert kept_messages(database, session.session_id) == messages_file(root, session)


def test_zero_seconds_copies_at_every_live_ingest(root: Path, database: Database) -> None:
    ingester = Ingester(database, max_bytes=2**26, clock=WallClock(), raw_copy_seconds=0)
    session = grown(Synthetic(synthetic_id(3), seed=3), root)
    location = SessionLocation.in_root(root, session.session_id)
    for _ in range(3):
        ingester.ingest(location, live=True)
        assert kept_messages(database, session.session_id) == messages_file(root, session)
        grown(session, root)


def test_reingest_refuses_an_open_session_whose_copy_is_behind(root: Path, database: Database) -> None:
    ingester, _, session, _ = left_behind(root, database, 4)
    stored = read_records(database.path)
    with pytest.raises(PostrunError, match="open and its next copy not taken yet"):
        ingester.reingest(session.session_id)
    assert read_records(database.path) == stored  # never rolled back to the older copy


def job_over(root: Path, database: Database, db_path: Path, *, keep_raw: bool = True) -> IngestJob:
    book = SessionBook()
    book.load(plan_catch_up(root, database, wall_now=time.time(), keep_raw=keep_raw))
    return IngestJob(
        host=Host(),
        root=root,
        db_path=db_path,
        database=database,
        max_bytes=2**26,
        keep_raw=keep_raw,
        raw_copy_seconds=EVERY,
        book=book,
        caches=MappingCaches(FakeClock()),
        logger=logging.getLogger("postrun.test.pacing"),
    )


def test_the_capture_copies_what_it_left_behind_at_stop_and_at_the_next_start(root: Path, tmp_path: Path) -> None:
    db_path = tmp_path / "store" / "postrun.db"
    sessions = [grown(Synthetic(synthetic_id(10 + i), seed=10 + i), root) for i in range(3)]
    database = Database.open(db_path)
    job = job_over(root, database, db_path)
    try:
        for session in sessions:
            assert job.run(Due(session.session_id, "startup")).outcome == "ingested"
            grown(session, root)
            assert job.run(Due(session.session_id, "event")).outcome == "updated"
            assert behind(database, session.session_id)
        # One session's files go before the capture stops: the records keep what was read.
        gone = sessions.pop()
        for path in (root / gone.session_id).iterdir():
            path.unlink()
        job.copy_behind()
        assert all(behind(database, s.session_id) for s in sessions)  # copied seconds ago: not due
        job.copy_behind(everything=True)  # as capture stops
        for session in sessions:
            assert kept_messages(database, session.session_id) == messages_file(root, session)
            assert not behind(database, session.session_id)
        assert behind(database, gone.session_id) and job.ingester.behind == {}
    finally:
        job.close()

    # Killed before it could copy: the next start-up reads the session again, files unchanged.
    session = sessions[0]
    database = Database.open(db_path)
    job = job_over(root, database, db_path)
    try:
        grown(session, root)
        assert job.run(Due(session.session_id, "event")).outcome == "updated"
        assert behind(database, session.session_id)
    finally:
        job.close()
    database = Database.open(db_path)
    job = job_over(root, database, db_path)
    try:
        assert session.session_id in plan_catch_up(root, database, wall_now=time.time(), keep_raw=False).unchanged
        assert plan_catch_up(root, database, wall_now=time.time()).changed == (session.session_id,)
        assert job.run(Due(session.session_id, "startup")).outcome == "unchanged"
        assert kept_messages(database, session.session_id) == messages_file(root, session)
        assert plan_catch_up(root, database, wall_now=time.time()).changed == ()
    finally:
        job.close()


def test_copies_left_behind_never_go_into_a_store_that_replaced_theirs(root: Path, tmp_path: Path) -> None:
    db_path = tmp_path / "store" / "postrun.db"
    session = grown(Synthetic(synthetic_id(20), seed=20), root)
    job = job_over(root, Database.open(db_path), db_path)
    try:
        job.run(Due(session.session_id, "startup"))
        grown(session, root)
        job.run(Due(session.session_id, "event"))
        assert job.ingester.copies_due(everything=True) == [session.session_id]
        for path in db_path.parent.iterdir():
            path.unlink()
        job.copy_behind(everything=True)
        assert list(db_path.parent.iterdir()) == []  # no new store made at stop: its start-up catches up
    finally:
        job.close()
