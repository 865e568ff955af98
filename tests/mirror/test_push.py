"""Pushing a store into a real PostgreSQL: equality record by record, idempotence, changes,
two machines in one database, the schema's version, and what a push does when it cannot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from postrun.errors import PostrunError
from postrun.exitcodes import ExitCode
from postrun.mirror.batch import apply, known
from postrun.mirror.push import MirrorError, Pushed, Pusher, machine_origin
from postrun.mirror.rows import Scrub
from postrun.mirror.schema import SCHEMA_VERSION
from postrun.mirror.target import mirror_target
from postrun.store import outbox
from postrun.store.db import Database
from postrun.store.write import upsert_session
from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.support import mirror_check
from tests.support.builders import command_step, mapped_session, message_step
from tests.support.capture_process import copy_data

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def ingest_fixtures(tmp_path: Path, env: dict[str, str], *cases: str) -> Path:
    """A store holding the fixtures' sessions, through the real `postrun capture --once`."""
    for case in cases:
        root = copy_data(case, tmp_path / "cline" / case)
        result = run_postrun("capture", "--once", env=env | {"POSTRUN_CLINE_DIR": str(root)})
        assert "summary:" in result.stdout, result.stderr
    return Path(env["POSTRUN_DB"])


@pytest.fixture
def pusher_for(mirror: Mirror, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PGPASSFILE", str(mirror.passfile))
    opened: list[Database] = []

    def build(db: Path, host: str = "laptop-1", user: str = "ada") -> Pusher:
        database = Database.open(db)
        opened.append(database)
        return Pusher(mirror_target(mirror.url), database, machine_origin(database, host, user))

    yield build
    for database in opened:
        database.close()


def store(database: Database, steps, *, at: datetime = T0, session_id: str = "1790000000000_store") -> None:
    upsert_session(database, mapped_session(steps, session_id=session_id), now=at, captured_on="laptop-1")


def test_first_push_sends_the_whole_store_and_the_mirror_equals_it(
    tmp_path: Path, env: dict[str, str], mirror: Mirror, pusher_for
) -> None:
    db = ingest_fixtures(tmp_path, env, "cline/basic_act", "cline-real/b_run_commands", "cline-real/h_subagents")
    pusher = pusher_for(db)
    sessions = len(mirror_check.store_sessions(db))
    assert outbox.backlog(pusher.database).sessions == sessions > 0
    batches = []
    pushed = pusher.drain(on_batch=batches.append)
    assert pushed.sessions == sessions and pushed.steps > 0
    assert outbox.backlog(pusher.database).sessions == 0
    assert outbox.state(pusher.database, "last_push") is not None
    with mirror.server.admin(mirror.database) as connection:
        assert mirror_check.differences(db, connection) == []
        hosts = connection.execute("SELECT DISTINCT machine_id, host, os_user FROM postrun.steps").fetchall()
        assert hosts == [(outbox.machine_id(pusher.database), "laptop-1", "ada")]
        failed = connection.execute(
            "SELECT count(*) FROM postrun.steps WHERE type = 'command' AND outcome = 'failed' AND command IS NOT NULL"
        ).fetchone()
        assert failed is not None and failed[0] > 0
    assert pusher.drain().sessions == 0  # nothing waiting: nothing sent


def test_a_batch_applied_twice_changes_nothing(tmp_path: Path, env: dict[str, str], mirror: Mirror, pusher_for) -> None:
    db = ingest_fixtures(tmp_path, env, "cline-real/a_read_edit")
    pusher = pusher_for(db)
    connection = pusher.connected()
    session_ids = outbox.waiting(pusher.database, 50)
    changes = outbox.read_changes(pusher.database, session_ids, {})
    with connection.transaction():
        apply(connection, pusher.origin, changes, Scrub.of(True))
    with mirror.server.admin(mirror.database) as admin:
        first = admin.execute("SELECT * FROM postrun.steps ORDER BY session_id, step_id").fetchall()
        mirrored_at = admin.execute("SELECT mirrored_at FROM postrun.sessions").fetchall()
        with connection.transaction():
            # As if the first commit's acknowledgement was lost:
            apply(connection, pusher.origin, changes, Scrub.of(True))
        assert admin.execute("SELECT * FROM postrun.steps ORDER BY session_id, step_id").fetchall() == first
        assert admin.execute("SELECT count(*) FROM postrun.history").fetchone() == (0,)
        assert len(admin.execute("SELECT mirrored_at FROM postrun.sessions").fetchall()) == len(mirrored_at)
        assert mirror_check.differences(db, admin) == []
    # What the mirror holds is not sent again: the second read of the same sessions is empty.
    held = known(connection, pusher.origin.machine_id, session_ids)
    again = outbox.read_changes(pusher.database, session_ids, held)
    assert [len(change.steps) for change in again] == [0] * len(session_ids)


def test_changed_removed_and_new_records_reach_the_mirror_with_their_history(
    tmp_path: Path, mirror: Mirror, pusher_for
) -> None:
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    database = pusher.database
    steps = [message_step(0, "fix the tests", role="user"), command_step(1, "pytest", "1 failed", exit_code=1)]
    store(database, [*steps, message_step(2, "looking")])
    assert pusher.drain().sessions == 1
    # An earlier step changes, one disappears (a checkpoint restore), one is new.
    later = T0 + timedelta(minutes=1)
    store(database, [steps[0], command_step(1, "pytest -x", "ok", exit_code=0), message_step(3, "done")], at=later)
    pushed = pusher.drain()
    assert pushed == type(pushed)(1, 2)  # only the changed and the new step travel
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(db, admin) == []
        kinds = admin.execute("SELECT kind, reason FROM postrun.history ORDER BY history_id").fetchall()
        assert ("step", "changed") in kinds and ("step", "removed") in kinds
        row = admin.execute("SELECT command, exit_code, outcome FROM postrun.steps WHERE type = 'command'").fetchone()
        assert row == ("pytest -x", 0, "ok")


def test_a_nul_in_an_id_reaches_the_mirror_as_u_fffd_and_holds_no_session_back(
    tmp_path: Path, mirror: Mirror, pusher_for
) -> None:
    # An agent's file names a tool call "toolu_re\u0000ad": PostgreSQL's text refuses U+0000,
    # and a batch it refuses would keep every session queued behind it from the mirror.
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    database = pusher.database
    odd = "toolu_re\x00ad#0"
    steps = [message_step(0, "list it", role="user"), command_step(1, "ls", "a.txt", step_id=odd)]
    store(database, steps)
    store(database, [message_step(0, "another", role="user")], session_id="1790000000001_next")
    assert pusher.drain().sessions == 2
    # Unchanged, the odd step is not sent again; a new step travels alone.
    store(database, [*steps, message_step(2, "done")], at=T0 + timedelta(minutes=1))
    assert pusher.drain() == Pushed(1, 1)
    with mirror.server.admin(mirror.database) as admin:
        ids = admin.execute("SELECT step_id FROM postrun.steps WHERE session_id = '1790000000000_store'").fetchall()
        assert sorted(ids) == [("msg_0#0",), ("msg_2#0",), ("toolu_re\ufffdad#0",)]
        assert admin.execute("SELECT count(*) FROM postrun.sessions").fetchone() == (2,)


def test_a_change_made_during_a_push_stays_queued(tmp_path: Path, mirror: Mirror, pusher_for) -> None:
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    store(pusher.database, [message_step(0, "one", role="user")])
    session_ids = outbox.waiting(pusher.database, 50)
    changes = outbox.read_changes(pusher.database, session_ids, {})
    store(pusher.database, [message_step(0, "one", role="user"), message_step(1, "two")], at=T0 + timedelta(seconds=5))
    connection = pusher.connected()
    with connection.transaction():
        apply(connection, pusher.origin, changes, Scrub.of(True))
    outbox.mark_pushed(pusher.database, [(c.session_id, c.version) for c in changes], "2026-11-30T09:00:06.000Z")
    assert outbox.backlog(pusher.database).sessions == 1  # the second change was not sent
    assert pusher.drain().sessions == 1
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(db, admin) == []


def test_two_stores_push_into_one_database_and_both_are_complete(
    tmp_path: Path, env: dict[str, str], mirror: Mirror, pusher_for
) -> None:
    first = ingest_fixtures(tmp_path / "one", env | {"POSTRUN_DB": str(tmp_path / "one.db")}, "cline/basic_act")
    second = ingest_fixtures(tmp_path / "two", env | {"POSTRUN_DB": str(tmp_path / "two.db")}, "cline/basic_act")
    one, two = pusher_for(first, "laptop-1", "ada"), pusher_for(second, "laptop-2", "grace")
    assert outbox.machine_id(one.database) != outbox.machine_id(two.database)
    one.drain()
    two.drain()
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(first, admin) == []
        assert mirror_check.differences(second, admin) == []
        per_host = admin.execute(
            "SELECT host, os_user, count(*) FROM postrun.sessions GROUP BY 1, 2 ORDER BY 1"
        ).fetchall()
        count = len(mirror_check.store_sessions(first))
        assert per_host == [("laptop-1", "ada", count), ("laptop-2", "grace", count)]


def test_a_new_database_gets_the_whole_store_again(tmp_path: Path, mirror: Mirror, pusher_for) -> None:
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    store(pusher.database, [message_step(0, "hello", role="user")])
    assert pusher.drain().sessions == 1
    pusher.disconnect()
    other = mirror.server.create_database()
    pusher.target = mirror_target(mirror.server.url(other))
    assert pusher.drain().sessions == 1
    with mirror.server.admin(other) as admin:
        assert mirror_check.differences(db, admin) == []


def test_a_newer_mirror_schema_is_refused(tmp_path: Path, mirror: Mirror, pusher_for) -> None:
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    store(pusher.database, [message_step(0, "hello", role="user")])
    pusher.drain()
    pusher.disconnect()
    with mirror.server.admin(mirror.database) as admin:
        admin.execute("UPDATE postrun.schema_version SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(PostrunError) as caught:
        pusher.connected()
    assert caught.value.exit_code == ExitCode.CONFIG
    assert f"newer than this Postrun knows ({SCHEMA_VERSION})" in str(caught.value)
    assert str(caught.value).startswith(f"mirror 127.0.0.1/{mirror.database}: ")


def test_a_wrong_password_or_a_read_only_server_keeps_everything_queued(
    tmp_path: Path, mirror: Mirror, pusher_for, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    store(pusher.database, [message_step(0, "hello", role="user")])
    monkeypatch.setenv("PGPASSFILE", str(mirror.server.write_passfile(tmp_path / "wrong", "not-the-password")))
    with pytest.raises(MirrorError, match='password authentication failed for user "postrun_app"'):
        pusher.drain()
    assert outbox.backlog(pusher.database).sessions == 1
    monkeypatch.setenv("PGPASSFILE", str(mirror.passfile))
    pusher.drain()  # creates the schema while it is writable
    store(pusher.database, [message_step(0, "hello", role="user"), message_step(1, "again")], at=T0 + timedelta(1))
    with mirror.server.admin(mirror.database) as admin:
        admin.execute(f"ALTER DATABASE {mirror.database} SET default_transaction_read_only = on")
        pusher.disconnect()
        with pytest.raises(MirrorError, match="read-only transaction"):
            pusher.drain()
        assert outbox.backlog(pusher.database).sessions == 1
        admin.execute(f"ALTER DATABASE {mirror.database} RESET default_transaction_read_only")
        assert pusher.drain().sessions == 1
        assert mirror_check.differences(db, admin) == []


def test_a_session_removed_from_the_store_is_removed_from_the_mirror(
    tmp_path: Path, mirror: Mirror, pusher_for
) -> None:
    db = tmp_path / "store.db"
    pusher = pusher_for(db)
    database = pusher.database
    for sid in ("1790000000000_keep", "1790000000000_gone"):
        steps = [message_step(0, "hello", role="user", session_id=sid), message_step(1, "more", session_id=sid)]
        store(database, steps, session_id=sid)
        store(database, steps[:1], session_id=sid, at=T0 + timedelta(1))  # and some history
    pusher.drain()
    # What forgetting a session does to the store: its rows go, a delete is queued with them.
    with database.transaction() as connection:
        for table in ("history", "turns", "segments", "actors", "steps"):
            connection.execute(f"DELETE FROM {table} WHERE session_id = '1790000000000_gone'")
        connection.execute("DELETE FROM step_search WHERE rowid NOT IN (SELECT rowid FROM steps)")
        connection.execute("DELETE FROM sessions WHERE id = '1790000000000_gone'")
        outbox.enqueue(connection, "1790000000000_gone", "2026-11-30T10:00:00.000Z", "delete")
    assert pusher.drain().sessions == 1
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(db, admin) == []
        for table in ("sessions", "segments", "actors", "turns", "steps", "history"):
            row = admin.execute(f"SELECT count(*) FROM postrun.{table} WHERE session_id = '1790000000000_gone'")
            assert row.fetchone() == (0,), table
