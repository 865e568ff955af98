"""A store of version 1 gains the digest index, and ingests compare digests through it alone."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import apsw

from postrun.store.db import STORE_VERSION, Database
from postrun.store.migrations import MIGRATIONS
from postrun.store.write import upsert_session
from tests.support.builders import command_step, mapped_session, message_step

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DIGESTS = "SELECT id, digest FROM steps WHERE session_id = ?"


def test_a_version_1_store_with_sessions_is_migrated_and_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "postrun.db"
    current = tmp_path / "current.db"
    with Database.open(current) as database:
        upsert_session(database, mapped_session([message_step(0, "hi")]), now=T0, captured_on="host")
    # A real version-1 file (whatever migrations came later), holding the same rows.
    old = apsw.Connection(str(path))
    old.execute(MIGRATIONS[0])
    old.execute("ATTACH ? AS current", (str(current),))
    for table in ("sessions", "segments", "actors", "turns", "steps"):
        columns = ", ".join(row[1] for row in old.execute(f"pragma main.table_info({table})"))
        old.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM current.{table}")
    old.execute("DETACH current; pragma user_version=1")
    old.close()

    with Database.open(path) as database:
        assert database.user_version() == STORE_VERSION == len(MIGRATIONS)
        session_id = database.execute("SELECT id FROM sessions").get
        plan = " ".join(row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {DIGESTS}", (session_id,)))
        assert "COVERING INDEX steps_digests" in plan
        mapped = mapped_session([message_step(0, "hi"), command_step(1, "ls", "a")])
        result = upsert_session(database, mapped, now=T0, captured_on="host")
        assert (result.status, result.rows_written) == ("updated", 2)  # the new step and the session
        assert dict(database.execute(DIGESTS, (session_id,))) == {row.id: row.digest for row in mapped.steps}
