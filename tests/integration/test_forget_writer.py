"""A forget whose scrub another writer holds up, over a real SQLite file and a second connection."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import apsw

from postrun.store.db import Database
from postrun.store.forget import forget_sessions, is_forgotten
from postrun.store.scrub import pending
from postrun.store.write import upsert_session
from tests.support.builders import mapped_session, message_step, session_record

SESSION = "1790000000001_aaaaa"


def test_a_writer_taking_the_store_right_after_the_removal_leaves_the_scrub_pending_not_an_error(
    tmp_path: Path,
) -> None:
    db = tmp_path / "postrun.db"
    with Database.open(db) as database:
        step = message_step(0, "a prompt to forget", role="user", session_id=SESSION)
        mapped = mapped_session([step], session_id=SESSION, session=session_record(SESSION))
        upsert_session(database, mapped, now=datetime(2026, 11, 30, 12, 0, tzinfo=UTC), captured_on="tests")
    writer = apsw.Connection(str(db))
    writer.set_busy_timeout(0)
    try:
        with Database.open(db) as database:
            database.connection.set_busy_timeout(200)  # the store's own 5 s, shortened for the test

            # SQLite calls the WAL hook once a write transaction committed and let go of its lock:
            # the removal's. The other writer takes the store then, as a capture's next batch would.
            def take_the_store(_connection: apsw.Connection, _name: str, _pages: int) -> int:
                if writer.getautocommit():
                    writer.execute("BEGIN IMMEDIATE")
                return apsw.SQLITE_OK

            database.connection.set_wal_hook(take_the_store)
            left = forget_sessions(database, [SESSION], now="2026-11-30T12:05:00.000Z")
            assert left is not None
            assert "the store file and its write-ahead log still hold the removed bytes" in left.describe()
            assert not writer.getautocommit()  # the writer held the store the whole time
            database.connection.set_wal_hook(None)
            writer.execute("ROLLBACK")
            assert is_forgotten(database, SESSION) and pending(database)
            assert database.execute("SELECT count(*) FROM sessions").get == 0
    finally:
        writer.close()
