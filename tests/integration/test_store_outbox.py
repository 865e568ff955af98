"""The mirror's outbox in the store: written in the transaction that changes a session,
one row per session, its version growing; the machine id; a v2 store migrating in place."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from postrun.store import outbox
from postrun.store.db import STORE_VERSION, Database
from postrun.store.migrations import MIGRATIONS
from postrun.store.write import upsert_session
from tests.support.builders import command_step, mapped_session, message_step

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture
def database(tmp_path: Path):
    with Database.open(tmp_path / "postrun.db") as db:
        yield db


def queued(database: Database) -> list[tuple[str, str, int]]:
    return [tuple(row) for row in database.execute("SELECT session_id, op, version FROM mirror_outbox")]


def test_every_change_is_queued_once_per_session_and_unchanged_ingests_are_not(database: Database) -> None:
    steps = [message_step(0, "fix it", role="user")]
    upsert_session(database, mapped_session(steps), now=T0, captured_on="h")
    assert queued(database) == [("1790000000000_store", "upsert", 1)]
    upsert_session(database, mapped_session(steps), now=T0 + timedelta(seconds=1), captured_on="h")
    assert queued(database) == [("1790000000000_store", "upsert", 1)]  # nothing changed
    upsert_session(
        database, mapped_session([*steps, command_step(1, "ls", "a")]), now=T0 + timedelta(2), captured_on="h"
    )
    assert queued(database) == [("1790000000000_store", "upsert", 2)]
    assert outbox.backlog(database).oldest == "2026-11-29T12:00:00.000Z"  # waiting since the first change


def test_the_outbox_row_is_part_of_the_session_transaction(database: Database) -> None:
    with pytest.raises(RuntimeError), database.transaction() as connection:
        outbox.enqueue(connection, "1790000000000_other", "2026-11-29T12:00:00.000Z")
        raise RuntimeError("the session's write failed")
    assert queued(database) == []


def test_marking_pushed_keeps_a_change_made_meanwhile(database: Database) -> None:
    upsert_session(database, mapped_session([message_step(0, "a", role="user")]), now=T0, captured_on="h")
    upsert_session(
        database, mapped_session([message_step(0, "b", role="user")]), now=T0 + timedelta(1), captured_on="h"
    )
    outbox.mark_pushed(database, [("1790000000000_store", 1)], "2026-11-29T12:00:05.000Z")
    assert queued(database) == [("1790000000000_store", "upsert", 2)]
    outbox.mark_pushed(database, [("1790000000000_store", 2)], "2026-11-29T12:00:06.000Z")
    assert queued(database) == []
    assert outbox.state(database, "last_push") == "2026-11-29T12:00:06.000Z"


def test_a_delete_is_never_coalesced_into_an_upsert(database: Database) -> None:
    steps = [message_step(0, "fix it", role="user")]
    with database.transaction() as connection:
        outbox.enqueue(connection, "1790000000000_store", "2026-11-29T12:00:00.000Z", "delete")  # a forget
    upsert_session(database, mapped_session(steps), now=T0, captured_on="h")  # recorded again before the push
    assert queued(database) == [("1790000000000_store", "delete", 2)]
    [change] = outbox.read_changes(database, ["1790000000000_store"], {})
    assert change.purge and change.session is not None and len(change.steps) == 1  # purged, then sent whole


def test_the_machine_id_is_random_per_store_and_stable(tmp_path: Path) -> None:
    with Database.open(tmp_path / "a.db") as first, Database.open(tmp_path / "b.db") as second:
        one, two = outbox.machine_id(first), outbox.machine_id(second)
    assert one != two and len(one) == 32
    with Database.open(tmp_path / "a.db") as again:
        assert outbox.machine_id(again) == one


def test_a_v2_store_migrates_in_place_and_queues_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "postrun.db"
    connection = apsw.Connection(str(path))
    for migration in MIGRATIONS[:2]:
        connection.execute(migration)
    connection.execute(
        "INSERT INTO sessions (id, agent, record, digest, started_at, approvals, source_files, captured_on,"
        " ingested_at, updated_at) VALUES ('1790000000000_old', 'cline', '{}', 'd', '2026-01-01T00:00:00.000Z',"
        " '{}', '[]', 'h', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z')"
    )
    connection.execute("pragma user_version=2")
    connection.close()
    with Database.open(path) as database:
        assert database.user_version() == STORE_VERSION
        assert queued(database) == [("1790000000000_old", "upsert", 1)]
        assert len(outbox.machine_id(database)) == 32


def test_two_writing_threads_of_one_process_take_turns(tmp_path: Path) -> None:
    """Capture's ingest and its mirror write from two threads: one waiting for the write lock
    must let the other, which holds it, finish (no busy timeout between them)."""
    path = tmp_path / "postrun.db"
    with Database.open(path) as holder, Database.open(path) as waiter:
        locked = threading.Event()
        results: list[str] = []

        def hold() -> None:
            with holder.transaction() as connection:
                locked.set()
                time.sleep(0.3)  # Python work inside the transaction: it needs the GIL to finish
                outbox.enqueue(connection, "1790000000000_a", "2026-11-29T12:00:00.000Z")
            results.append("holder committed")

        thread = threading.Thread(target=hold, name="holder")
        thread.start()
        locked.wait(5)
        started = time.monotonic()
        with waiter.transaction() as connection:
            outbox.enqueue(connection, "1790000000000_b", "2026-11-29T12:00:01.000Z")
        thread.join(10)
        assert results == ["holder committed"]
        assert time.monotonic() - started < 3  # it waited for the holder, not for the busy timeout
        assert sorted(row[0] for row in queued(waiter)) == ["1790000000000_a", "1790000000000_b"]
