"""The start-up plan and the poller over real session files and a real store."""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation
from postrun.capture.book import SessionBook, plan_catch_up
from postrun.capture.dispatcher import Dispatcher
from postrun.capture.poller import NEW_FOLDER_GRACE_SECONDS, Poller, root_state
from postrun.capture.scheduler import Scheduler
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.conftest import FIXTURES
from tests.support.clock import FakeClock
from tests.support.logs import LogLines, captured

BASIC = "1790000000000_basic"
PLANS = "1790000100000_plans"  # an open session (no end time)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "cline/basic_act/data", tmp_path / "data")
    return tmp_path / "data" / "sessions"


@pytest.fixture
def database(tmp_path: Path) -> Database:
    database = Database.open(tmp_path / "store" / "postrun.db")
    yield database
    database.close()


def add_session(root: Path, case: str, session_id: str) -> None:
    shutil.copytree(FIXTURES / case / "data" / "sessions" / session_id, root / session_id)


def ingest(database: Database, root: Path, session_id: str) -> None:
    Ingester(database, max_bytes=2**26).ingest(SessionLocation.in_root(root, session_id))


def test_plan_skips_what_is_stored_unchanged(root: Path, database: Database) -> None:
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    plan = plan_catch_up(root, database, wall_now=time.time())
    assert plan.root_found
    assert set(plan.present) == {BASIC, PLANS}
    assert set(plan.changed) == {BASIC, PLANS}  # nothing stored yet
    for session_id in (BASIC, PLANS):
        ingest(database, root, session_id)
    plan = plan_catch_up(root, database, wall_now=time.time())
    assert plan.changed == ()
    assert plan.unchanged == {BASIC, PLANS}
    assert plan.open == {PLANS}
    os.utime(root / PLANS / f"{PLANS}.messages.json")  # same bytes, new mtime: must be looked at
    plan = plan_catch_up(root, database, wall_now=time.time())
    assert plan.changed == (PLANS,)


def test_plan_orders_folder_watches_by_recent_change(root: Path, database: Database) -> None:
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    old = time.time() - 3 * 24 * 3600
    for path in (root / BASIC).iterdir():
        os.utime(path, (old, old))
    for session_id in (BASIC, PLANS):
        ingest(database, root, session_id)
    plan = plan_catch_up(root, database, wall_now=time.time())
    assert BASIC not in plan.recent  # ended and untouched for days: neither polled nor watched
    assert plan.watch_first == (PLANS,)


def test_plan_without_root(tmp_path: Path, database: Database) -> None:
    plan = plan_catch_up(tmp_path / "missing", database, wall_now=time.time())
    assert not plan.root_found
    assert plan.present == ()


def test_book_tracks_changes_and_reads(root: Path, database: Database) -> None:
    plan = plan_catch_up(root, database, wall_now=time.time())
    book = SessionBook()
    book.load(plan)
    assert BASIC in book
    assert not book.was_read_at(BASIC, plan.fingerprints[BASIC])  # new: not stored yet
    assert not book.saw(BASIC, plan.fingerprints[BASIC])  # the plan saw these fingerprints already
    assert book.saw(BASIC, 123)
    assert not book.saw(BASIC, 123)
    book.read(BASIC, 123, is_open=True)
    assert book.was_read_at(BASIC, 123)
    assert BASIC in book.active()
    book.forget_reads()
    assert not book.was_read_at(BASIC, 123)
    book.remove(BASIC)
    assert BASIC not in book
    assert book.active() == []


@pytest.fixture
def recorder() -> Iterator[LogLines]:
    with captured("postrun.test.poller") as lines:
        yield lines


class Polling:
    """A Poller driven tick by tick (its thread never started), over a real root."""

    def __init__(self, root: Path, database: Database) -> None:
        self.clock = FakeClock()  # the poller's
        self.scheduler_clock = FakeClock()
        self.scheduler = Scheduler(self.scheduler_clock, debounce_seconds=1.0)
        self.book = SessionBook()
        plan = plan_catch_up(root, database, wall_now=time.time())
        self.book.load(plan)
        self.poller = Poller(
            root,
            self.book,
            Dispatcher(self.scheduler, lambda due: (None, True), catch_up=lambda session_ids, give_way: None),
            None,
            poll_seconds=1,
            full_sweep_seconds=300,
            logger=logging.getLogger("postrun.test.poller"),
            monotonic=self.clock.now,
        )
        self.poller.prime(root_state(root) if plan.root_found else None, plan.present, plan.skipped)

    def due(self) -> list[tuple[str, str]]:
        """Everything the ticks so far made due (taken from the scheduler)."""
        self.scheduler_clock.advance(60)
        found = []
        while (due := self.scheduler.take()) is not None:
            found.append((due.session_id, due.reason))
            self.scheduler.finished(due, cost_seconds=None, resolved=True)
        return found


def test_poll_finds_a_change_once(root: Path, database: Database) -> None:
    polling = Polling(root, database)
    polling.poller.tick(full=False)
    assert polling.due() == []  # nothing changed since the plan
    messages = root / BASIC / f"{BASIC}.messages.json"
    messages.write_bytes(messages.read_bytes() + b"\n")
    polling.poller.tick(full=False)
    polling.poller.tick(full=False)
    assert polling.due() == [(BASIC, "poll")]


def test_poll_finds_a_new_folder_even_if_its_files_come_later(root: Path, database: Database) -> None:
    polling = Polling(root, database)
    source = FIXTURES / "cline/plan_act_resumed_open/data/sessions" / PLANS
    (root / PLANS).mkdir()  # the root's mtime changes now, not when the files arrive
    polling.poller.tick(full=False)
    assert polling.due() == []
    for path in source.iterdir():
        shutil.copy2(path, root / PLANS / path.name)
    polling.clock.advance(1)  # still within the grace period of a new folder: listed again
    polling.poller.tick(full=False)
    assert polling.due() == [(PLANS, "poll")]


def test_junk_is_warned_about_once_it_is_clearly_junk(root: Path, database: Database, recorder: LogLines) -> None:
    polling = Polling(root, database)
    (root / "not a session").mkdir()
    (root / "empty").mkdir()
    polling.poller.tick(full=False)
    assert not [m for m in recorder.lines if "skipped" in m]  # may be a session being created
    polling.clock.advance(NEW_FOLDER_GRACE_SECONDS)
    polling.poller.tick(full=False)
    polling.poller.tick(full=True)
    warnings = sorted(m for m in recorder.lines if "skipped" in m)
    assert warnings == [
        f"WARNING cline: '{root / 'empty'}': skipped (no empty.messages.json)",
        f"WARNING cline: '{root / 'not a session'}': skipped (unsafe name)",
    ]


def test_root_gone_and_back(root: Path, database: Database, recorder: LogLines) -> None:
    polling = Polling(root, database)
    shutil.rmtree(root)
    polling.poller.tick(full=False)
    polling.poller.tick(full=False)
    assert recorder.lines == [f"WARNING cline: {root} is gone; stored sessions are kept, waiting for it to come back"]
    root.mkdir()
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    polling.poller.tick(full=False)
    assert recorder.lines[-1] == f"INFO cline: {root} appeared; watching it"
    assert polling.due() == [(PLANS, "poll")]
    assert BASIC not in polling.book  # its folder went away (the store keeps it)


def test_full_sweep_compares_every_session(root: Path, database: Database) -> None:
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    for session_id in (BASIC, PLANS):
        ingest(database, root, session_id)
    old = time.time() - 3 * 24 * 3600
    for path in (root / BASIC).iterdir():
        os.utime(path, (old, old))
    polling = Polling(root, database)
    assert BASIC not in polling.book.active()  # an old, ended session is not polled every tick
    messages = root / BASIC / f"{BASIC}.messages.json"
    data = messages.read_bytes()
    messages.write_bytes(data)
    os.utime(messages, (old + 5, old + 5))  # changed, yet still old
    polling.poller.tick(full=False)
    assert polling.due() == []
    polling.poller.tick(full=True)
    assert polling.due() == [(BASIC, "poll")]


def test_clines_own_files_in_the_root_do_not_cost_a_listing(root: Path, database: Database) -> None:
    """Cline rewrites sessions.index.json in the root by temp file + rename: the root's mtime
    moves every time, but its names do not, so the root is not listed again."""
    polling = Polling(root, database)
    index = root / "sessions.index.json"
    for round_ in range(5):
        temp = root / "sessions.index.json.tmp"
        temp.write_text(f'{{"round": {round_}}}')
        os.replace(temp, index)
        polling.poller.tick(full=False)
    assert polling.poller.listings == 1  # the first time, when sessions.index.json was new
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    polling.poller.tick(full=False)
    assert polling.poller.listings == 2
    assert polling.due() == [(PLANS, "poll")]
