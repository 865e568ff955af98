"""The store on a real SQLite file: permissions, pragmas, migrations, upsert, history, search."""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postrun.errors import StoreError, StoreTooNewError, UsageError
from postrun.exitcodes import ExitCode
from postrun.schema import envelope_problems
from postrun.store import db as db_module
from postrun.store.db import STORE_VERSION, Database, StoreMissing
from postrun.store.query import history, list_sessions, load_envelope, resolve_session_id
from postrun.store.search import search as search_query_in
from postrun.store.search import search_query
from postrun.store.write import stored_state, upsert_session
from tests.reliability.kit import store_problems
from tests.support import v12check
from tests.support.builders import SESSION_ID, command_step, mapped_session, message_step, session_record

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "postrun.db"


@pytest.fixture
def database(db_path: Path):
    with Database.open(db_path) as db:
        yield db


def search(database: Database, text: str, **filters: object) -> list:
    return search_query_in(database, search_query(text, **filters))  # type: ignore[arg-type]


def store(database: Database, steps, at: datetime = T0, **kwargs):
    return upsert_session(database, mapped_session(steps, **kwargs), now=at, captured_on="testhost")


def test_files_are_private_whatever_the_umask(db_path: Path) -> None:
    old = os.umask(0)
    try:
        with Database.open(db_path) as db:
            store(db, [message_step(0, "hello")])
            for suffix in ("", "-wal", "-shm"):
                mode = stat.S_IMODE(Path(f"{db_path}{suffix}").stat().st_mode)
                assert mode == 0o600, (suffix, oct(mode))
    finally:
        os.umask(old)
    assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700


def test_pragmas(database: Database) -> None:
    assert database.execute("pragma journal_mode").get == "wal"
    assert database.execute("pragma synchronous").get == 1  # NORMAL
    assert database.execute("pragma foreign_keys").get == 1
    assert database.execute("pragma busy_timeout").get == 5000
    assert database.user_version() == STORE_VERSION


def test_a_store_from_a_newer_postrun_is_refused(db_path: Path) -> None:
    with Database.open(db_path) as db:
        db.execute(f"pragma user_version={STORE_VERSION + 1}")
    with pytest.raises(StoreTooNewError) as caught:
        Database.open(db_path)
    assert caught.value.exit_code == ExitCode.CONFIG
    assert "newer Postrun" in str(caught.value) and str(db_path) in str(caught.value)


def test_a_file_that_is_not_a_database_is_one_clear_error(db_path: Path) -> None:
    db_path.parent.mkdir()
    db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a SQLite database"):
        Database.open(db_path)


def test_missing_store_is_not_created_for_reads(db_path: Path) -> None:
    with pytest.raises(StoreMissing):
        Database.open(db_path, create=False)
    assert not db_path.exists()


def test_migrations_run_on_an_old_store(db_path: Path) -> None:
    db_path.parent.mkdir()
    apsw.Connection(str(db_path)).close()  # an empty file at user_version 0
    with Database.open(db_path) as db:
        assert db.user_version() == STORE_VERSION
        assert db.execute("SELECT count(*) FROM sessions").get == 0


def test_first_ingest_then_unchanged_writes_nothing(database: Database) -> None:
    steps = [message_step(0, "fix it", role="user"), command_step(1, "npm test", "ok")]
    first = store(database, steps)
    assert (first.status, first.steps, first.turns, first.segments) == ("ingested", 2, 1, 1)
    assert first.rows_written > 0
    again = store(database, steps, at=T0 + timedelta(hours=1))
    assert (again.status, again.rows_written) == ("unchanged", 0)
    [summary] = list_sessions(database)
    assert summary.updated_at == summary.ingested_at == "2026-11-29T12:00:00.000Z"
    assert database.execute("SELECT count(*) FROM history").get == 0


def test_an_appended_step_writes_the_step_and_the_session_row(database: Database) -> None:
    steps = [message_step(0, "fix it", role="user"), command_step(1, "npm test", "ok")]
    store(database, steps)
    later = store(database, [*steps, message_step(2, "done")], at=T0 + timedelta(minutes=5))
    assert later.status == "updated"
    assert later.rows_written == 2
    [summary] = list_sessions(database)
    assert summary.updated_at == "2026-11-29T12:05:00.000Z"


def test_changed_and_removed_steps_are_kept_in_history(database: Database) -> None:
    steps = [
        message_step(0, "fix it", role="user"),
        command_step(1, "npm test", "1 failing", exit_code=1),
        message_step(2, "retrying"),
    ]
    store(database, steps)
    rewritten = [steps[0], command_step(1, "npm test", "all passing", exit_code=0)]
    result = store(database, rewritten, at=T0 + timedelta(minutes=1))
    assert result.status == "updated"
    entries = history(database, SESSION_ID)
    assert [(e.kind, e.record_id, e.reason) for e in entries] == [
        ("step", "toolu_1#0", "changed"),
        ("step", "msg_2#0", "removed"),
    ]
    assert entries[0].record["payload"]["stdout"] == "1 failing"
    assert entries[1].record["payload"]["text"] == "retrying"
    assert [s["id"] for s in load_envelope(database, SESSION_ID)["steps"]] == ["msg_0#0", "toolu_1#0"]


def test_changed_and_removed_turns_are_kept_in_history(database: Database) -> None:
    steps = [message_step(0, "fix it", role="user"), {**message_step(1, "on it"), "turn_id": "turn:2"}]
    first = mapped_session(steps)
    upsert_session(database, first, now=T0, captured_on="testhost")
    [turn_1, turn_2] = first.turns
    later = replace(first, turns=[{**turn_1, "started_at": "2026-09-21T14:20:00.000Z"}], steps=first.steps[:1])
    assert upsert_session(database, later, now=T0 + timedelta(minutes=1), captured_on="testhost").status == "updated"
    entries = [e for e in history(database, SESSION_ID) if e.kind == "turn"]
    assert [(e.record_id, e.reason) for e in entries] == [("turn:1", "changed"), ("turn:2", "removed")]
    without_step_ids = [{k: v for k, v in t.items() if k != "step_ids"} for t in (turn_1, turn_2)]
    assert [e.record for e in entries] == without_step_ids


def test_earlier_versions_of_the_session_record_are_kept_in_history(database: Database) -> None:
    steps = [message_step(0, "fix it", role="user")]
    metrics = {
        "cost_usd": 0.01,
        "api_requests": 1,
        "tokens": {"input": 10, "output": 1, "cache_read": 0, "cache_creation": 0},
    }
    store(database, steps, session=session_record(metrics=metrics))
    later_metrics = {**metrics, "cost_usd": 0.02, "api_requests": 2}
    ended = session_record(metrics=later_metrics, ended_at="2026-09-21T15:00:00.000Z")
    assert store(database, steps, at=T0 + timedelta(minutes=1), session=ended).status == "updated"
    store(database, steps, at=T0 + timedelta(minutes=2), session=ended)  # the same again: no new version
    [entry] = history(database, SESSION_ID)
    assert (entry.kind, entry.record_id, entry.reason, entry.replaced_at) == (
        "session",
        SESSION_ID,
        "changed",
        "2026-11-29T12:01:00.000Z",
    )
    assert entry.record == session_record(metrics=metrics)
    assert load_envelope(database, SESSION_ID)["session"] == ended


def test_first_approval_snapshot_is_kept(database: Database) -> None:
    steps = [message_step(0, "hi", role="user")]
    store(database, steps, approvals={"kind": "vscode", "actions": {"readFiles": True}})
    store(database, [*steps, message_step(1, "x")], approvals={"kind": "vscode", "actions": {"readFiles": False}})
    state = stored_state(database, SESSION_ID)
    assert state is not None and state.approvals == {"kind": "vscode", "actions": {"readFiles": True}}


def test_envelope_is_valid_v12_with_rebuilt_step_ids(database: Database) -> None:
    steps = [message_step(1, "b"), message_step(0, "a", role="user")]
    store(database, steps)
    envelope = load_envelope(database, SESSION_ID)
    assert v12check.problems(envelope) == []
    assert envelope_problems(envelope) == []
    assert envelope["turns"][0]["step_ids"] == ["msg_0#0", "msg_1#0"]


def test_session_prefix_resolution(database: Database) -> None:
    store(database, [message_step(0, "a", role="user", session_id="abc_1")], session_id="abc_1")
    store(database, [message_step(0, "a", role="user", session_id="abd_2")], session_id="abd_2")
    assert resolve_session_id(database, "abc") == "abc_1"
    with pytest.raises(Exception, match="ambiguous: abc_1, abd_2"):
        resolve_session_id(database, "ab")
    with pytest.raises(Exception, match=f"no session zz in {database.path}"):
        resolve_session_id(database, "zz")
    # A pasted id's surrounding whitespace is not part of it (before: "no session abc_1  in …").
    assert resolve_session_id(database, " abc_1\n") == "abc_1"
    assert resolve_session_id(database, "abd ") == "abd_2"
    with pytest.raises(UsageError, match="empty"):
        resolve_session_id(database, " \t")


def test_search_with_filters(database: Database) -> None:
    steps = [
        message_step(0, "please fix the flaky widget test", role="user"),
        command_step(1, "npm test widget", "FAIL widget.test.ts", exit_code=1),
        command_step(2, "npm run lint", "All files pass"),
    ]
    store(database, steps)
    assert {hit.step_id for hit in search(database, "widget")} == {"msg_0#0", "toolu_1#0"}
    assert [hit.step_id for hit in search(database, "widget", step_type="command")] == ["toolu_1#0"]
    assert [hit.step_id for hit in search(database, "npm", failed=True)] == ["toolu_1#0"]
    assert search(database, "widget", since="2027-01-01") == []
    assert "»FAIL« widget.test.ts" in search(database, "FAIL")[0].snippet
    # Quotes and FTS operators in a query are words, not syntax.
    assert search(database, 'widget" OR "x') == []


def test_search_index_follows_changes_and_removals(database: Database) -> None:
    store(database, [message_step(0, "alpha", role="user"), message_step(1, "bravo")])
    store(database, [message_step(0, "alpha", role="user"), message_step(1, "charlie")])
    assert search(database, "bravo") == []
    assert [hit.step_id for hit in search(database, "charlie")] == ["msg_1#0"]
    store(database, [message_step(0, "alpha", role="user")])
    assert search(database, "charlie") == []


def test_sessions_of_one_transaction_are_indexed_when_it_commits(database: Database, db_path: Path) -> None:
    """A catch-up's batch: each session in a savepoint of one transaction. The index is written
    at the commit; a session rolled back on its own leaves nothing in it, and a session stored
    twice in the batch is unindexed and indexed again in order."""
    other = "session-two"
    with database.transaction():
        store(database, [message_step(0, "alpha", role="user"), message_step(1, "bravo")])
        with pytest.raises(RuntimeError), database.transaction():
            store(database, [message_step(0, "doomed words", role="user", session_id=other)], session_id=other)
            raise RuntimeError("this session fails after its steps were written")
        store(database, [message_step(0, "alpha", role="user"), message_step(1, "charlie")])
        assert database.execute("SELECT count(*) FROM steps WHERE session_id = ?", (other,)).get == 0
    assert search(database, "doomed") == []
    assert search(database, "bravo") == []
    assert [hit.step_id for hit in search(database, "charlie")] == ["msg_1#0"]
    assert [hit.step_id for hit in search(database, "alpha")] == ["msg_0#0"]
    assert store_problems(db_path) == []


def test_a_long_batch_indexes_between_its_sessions_what_it_held_back(
    database: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``DEFERRED_ROWS`` the held-back index rows are written between two sessions: a
    session rolled back after that takes only its own rows with it."""
    monkeypatch.setattr(db_module, "DEFERRED_ROWS", 2)
    other = "session-two"
    with database.transaction():
        store(database, [message_step(0, "alpha", role="user"), message_step(1, "bravo")])
        assert [hit.step_id for hit in search(database, "bravo")] == ["msg_1#0"]  # before the commit
        with pytest.raises(RuntimeError), database.transaction():
            store(database, [message_step(0, "doomed", role="user", session_id=other)], session_id=other)
            raise RuntimeError("this session fails after its steps were written")
    assert search(database, "doomed") == []
    assert [hit.step_id for hit in search(database, "alpha")] == ["msg_0#0"]
    assert store_problems(db_path) == []


def test_a_session_rolled_back_after_unindexing_keeps_the_others_index_rows(database: Database, db_path: Path) -> None:
    """Changing a stored step writes what the batch held back first (the index must hold what it
    unindexes); that session then failing must not take the other sessions' rows with it."""
    other = "session-two"
    store(database, [message_step(0, "oldtext", role="user", session_id=other)], session_id=other)
    with database.transaction():
        store(database, [message_step(0, "alpha", role="user"), message_step(1, "bravo")])
        with pytest.raises(RuntimeError), database.transaction():
            changed = [
                message_step(0, "newtext", role="user", session_id=other),
                message_step(1, "ghost", session_id=other),
            ]
            store(database, changed, session_id=other)
            raise RuntimeError("this session fails after it changed a step")
    assert [hit.step_id for hit in search(database, "alpha")] == ["msg_0#0"]
    assert [hit.step_id for hit in search(database, "oldtext")] == ["msg_0#0"]
    assert search(database, "ghost") == [] and search(database, "newtext") == []
    assert store_problems(db_path) == []


def test_a_transaction_rolled_back_whole_indexes_nothing_later(database: Database, db_path: Path) -> None:
    with pytest.raises(RuntimeError), database.transaction():
        store(database, [message_step(0, "vanishing", role="user")])
        raise RuntimeError("the whole batch fails")
    store(database, [message_step(0, "kept", role="user")])
    assert search(database, "vanishing") == []
    assert [hit.step_id for hit in search(database, "kept")] == ["msg_0#0"]
    assert store_problems(db_path) == []


def test_failed_transaction_leaves_the_store_as_it_was(database: Database) -> None:
    store(database, [message_step(0, "alpha", role="user")])
    before = load_envelope(database, SESSION_ID)
    database.execute("CREATE TRIGGER boom BEFORE INSERT ON steps BEGIN SELECT RAISE(ABORT, 'boom'); END")
    with pytest.raises(apsw.ConstraintError):
        store(database, [message_step(0, "alpha", role="user"), message_step(1, "new")])
    assert load_envelope(database, SESSION_ID) == before
    assert search(database, "new") == []
    assert database.execute("SELECT count(*) FROM history").get == 0


def test_a_reader_sees_committed_data_while_a_writer_holds_the_lock(db_path: Path) -> None:
    with Database.open(db_path) as writer:
        store(writer, [message_step(0, "first", role="user")])
        started, release = threading.Event(), threading.Event()
        seen: list[int] = []

        def read() -> None:
            started.wait(10)
            with Database.open(db_path) as reader:
                seen.append(len(load_envelope(reader, SESSION_ID)["steps"]))
            release.set()

        thread = threading.Thread(target=read)
        thread.start()
        with writer.transaction() as connection:
            connection.execute("DELETE FROM step_search")
            started.set()
            assert release.wait(10), "reader blocked behind the writer"
        thread.join(10)
    assert seen == [1]


def test_opening_waits_for_a_lock_held_on_the_whole_file(db_path: Path) -> None:
    # The first read (proving the file is a store) meets the lock: it must wait the busy
    # timeout like every later statement, not fail at once (the review app's pages did).
    Database.open(db_path).close()
    holder = apsw.Connection(str(db_path))
    holder.execute("pragma locking_mode=exclusive")
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.5, holder.close)
    release.start()
    try:
        with Database.open(db_path, create=False) as reader:
            assert reader.user_version() == STORE_VERSION
    finally:
        release.join(10)


text_without_surrogates = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=text_without_surrogates, command=text_without_surrogates)
def test_any_string_survives_a_store_round_trip(database: Database, text: str, command: str) -> None:
    steps = [message_step(0, text, role="user"), command_step(1, command, text + "\x00tail")]
    store(database, steps)
    envelope = load_envelope(database, SESSION_ID)
    assert envelope["steps"][0]["payload"]["text"] == text
    assert envelope["steps"][1]["payload"]["command"] == command
    assert envelope["steps"][1]["payload"]["stdout"] == text + "\x00tail"


def test_a_folder_given_as_the_store_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a folder; the store is a file"):
        Database.open(tmp_path)
