"""A store of version 1 gains the digest index, and ingests compare digests through it alone."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from postrun.store.db import STORE_VERSION, Database
from postrun.store.migrations import MIGRATIONS
from postrun.store.write import upsert_session
from tests.support.builders import command_step, mapped_session, message_step
from tests.support.old_store import write_old_store

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DIGESTS = "SELECT id, digest FROM steps WHERE session_id = ?"


def test_a_version_1_store_with_sessions_is_migrated_and_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "postrun.db"
    write_old_store(path, [mapped_session([message_step(0, "hi")])], version=1)

    with Database.open(path) as database:
        assert database.user_version() == STORE_VERSION == len(MIGRATIONS)
        session_id = database.execute("SELECT id FROM sessions").get
        plan = " ".join(row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {DIGESTS}", (session_id,)))
        assert "COVERING INDEX steps_digests" in plan
        mapped = mapped_session([message_step(0, "hi"), command_step(1, "ls", "a")])
        result = upsert_session(database, mapped, now=T0, captured_on="host")
        assert (result.status, result.rows_written) == ("updated", 2)  # the new step and the session
        assert dict(database.execute(DIGESTS, (session_id,))) == {row.id: row.digest for row in mapped.steps}
