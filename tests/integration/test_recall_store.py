"""Recall's store side over a real SQLite file: the read-only snapshot, the active window, citations."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from postrun.errors import StoreError, StoreTooNewError, StoreTooOldError
from postrun.recall.citations import ReviewApp
from postrun.recall.tools import Recall
from postrun.store import recall
from postrun.store.db import STORE_VERSION, Database, StoreMissing
from postrun.store.query import list_sessions
from postrun.store.search import search_query
from postrun.store.snapshot import read_store
from postrun.store.write import upsert_session
from postrun.web.state import ServeState, write_state
from tests.support.builders import command_step, mapped_session, message_step, session_record
from tests.support.recall import store_fingerprint

STORED_AT = datetime(2026, 9, 21, 14, 14, tzinfo=UTC)
LAST_STEP = datetime(2026, 9, 21, 14, 13, 22, tzinfo=UTC)  # message_step(2)'s time


def _store(path: Path, *session_ids: str) -> None:
    with Database.open(path) as database:
        for session_id in session_ids:
            steps = [
                message_step(0, "Why does the parser fail?", role="user", session_id=session_id),
                command_step(1, "pytest tests/test_parser.py", "1 failed", exit_code=1, session_id=session_id),
                message_step(2, "The parser drops the last line.", session_id=session_id),
            ]
            mapped = mapped_session(steps, session_id=session_id, session=session_record(session_id))
            upsert_session(database, mapped, now=STORED_AT, captured_on="host")


def _ids(database: Database) -> list[str]:
    return [summary.id for summary in list_sessions(database)]


def test_a_read_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "store" / "postrun.db"
    _store(db, "1790000000000_aaaaa")
    before = store_fingerprint(db)
    assert read_store(db, _ids) == ["1790000000000_aaaaa"]
    assert store_fingerprint(db) == before


def test_a_read_sees_what_an_open_writer_committed(tmp_path: Path) -> None:
    db = tmp_path / "store" / "postrun.db"
    _store(db, "1790000000000_aaaaa")
    with Database.open(db) as writer:  # a capture running: its -wal and -shm are there
        upsert_session(writer, mapped_session([], session_id="1790000000001_bbbbb"), now=STORED_AT, captured_on="h")
        listing = sorted(p.name for p in db.parent.iterdir())
        assert "postrun.db-wal" in listing
        assert read_store(db, _ids) == ["1790000000000_aaaaa", "1790000000001_bbbbb"]
        assert sorted(p.name for p in db.parent.iterdir()) == listing


def test_a_writer_that_comes_in_mid_read_has_the_read_done_again(tmp_path: Path) -> None:
    db = tmp_path / "store" / "postrun.db"
    _store(db, "1790000000000_aaaaa")
    writers: list[Database] = []
    answers: list[list[str]] = []

    def work(database: Database) -> list[str]:
        answers.append(_ids(database))
        if not writers:  # the first read: a capture starts and stores a session meanwhile
            writers.append(Database.open(db))
            upsert_session(
                writers[0], mapped_session([], session_id="1790000000001_bbbbb"), now=STORED_AT, captured_on="h"
            )
        return answers[-1]

    try:
        assert read_store(db, work) == ["1790000000000_aaaaa", "1790000000001_bbbbb"]
    finally:
        writers[0].close()
    assert answers[0] == ["1790000000000_aaaaa"] and len(answers) == 2


def test_a_writer_that_rebuilds_the_file_mid_read_has_the_read_done_again(tmp_path: Path) -> None:
    # Before: an immutable read of a file a writer rebuilt meanwhile (`forget --yes` runs VACUUM
    # and checkpoints) failed as "the database file is corrupt" instead of being read again.
    db = tmp_path / "store" / "postrun.db"
    with Database.open(db) as database:
        for number in range(40):
            session_id = f"17900000{number:05d}_aaaaa"
            steps = [command_step(1, "pytest " + "x" * 3000, "1 failed\n" * 500, exit_code=1, session_id=session_id)]
            mapped = mapped_session(steps, session_id=session_id, session=session_record(session_id))
            upsert_session(database, mapped, now=STORED_AT, captured_on="host")
    reads: list[int] = []

    def work(database: Database) -> int:
        reads.append(len(database.execute("SELECT id FROM sessions LIMIT 1").fetchall()))
        if len(reads) == 1:
            with Database.open(db) as writer:
                writer.execute("DELETE FROM steps WHERE session_id > '1790000000020'; VACUUM")
                writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(summary.steps for summary in list_sessions(database))

    assert read_store(db, work) == 20 and len(reads) == 2  # as rebuilt: 20 sessions of one step left


def test_stores_it_cannot_read(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    with pytest.raises(StoreMissing):
        read_store(missing, _ids)
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(StoreMissing):
        read_store(tmp_path / "empty.db", _ids)
    for version, error, reason in (
        (STORE_VERSION + 1, StoreTooNewError, "newer Postrun"),
        (STORE_VERSION - 1, StoreTooOldError, "run postrun capture or postrun ingest once"),
        (0, StoreError, "not a Postrun store"),
    ):
        other = tmp_path / f"v{version}.db"
        connection = apsw.Connection(str(other))
        connection.execute(f"CREATE TABLE t (x); pragma user_version={version}")
        connection.close()
        with pytest.raises(error, match=reason):
            read_store(other, _ids)
    assert not any(name.endswith(("-wal", "-shm")) for name in os.listdir(tmp_path))


def _recall(db: Path, now: datetime, state: Path) -> Recall:
    return Recall(db, ReviewApp(state), clock=lambda: now, home=None)


def test_active_means_a_step_in_the_last_ten_minutes_by_the_injected_clock(tmp_path: Path) -> None:
    db = tmp_path / "store" / "postrun.db"
    _store(db, "1790000000000_aaaaa")
    state = tmp_path / "serve.json"
    almost = _recall(db, LAST_STEP + timedelta(minutes=10), state).search("parser")
    assert almost.hits == [] and almost.active_left_out == 1
    assert _recall(db, LAST_STEP + timedelta(minutes=10), state).search("parser", include_active=True).hits
    later = _recall(db, LAST_STEP + timedelta(minutes=10, milliseconds=1), state).search("parser")
    assert {hit.seq for hit in later.hits} == {0, 1, 2}
    assert later.active_left_out == 0
    history = _recall(db, LAST_STEP + timedelta(minutes=5), state).file_history("/home/dev/app/tests/test_parser.py")
    assert history.touches == [] and history.active_left_out == 1


def test_citations_follow_the_running_review_app(tmp_path: Path) -> None:
    db = tmp_path / "store" / "postrun.db"
    _store(db, "1790000000000_aaaaa")
    state = tmp_path / "state" / "serve.json"
    recall = _recall(db, STORED_AT + timedelta(days=1), state)
    assert recall.search("parser").hits[0].url.startswith("http://127.0.0.1:8765/s/1790000000000_aaaaa#step-")
    write_state(state, ServeState("::1", 9123, os.getpid(), "secret"))
    hit = recall.search("pytest").hits[0]
    assert (
        hit.url == "http://[::1]:9123/s/1790000000000_aaaaa#step-1" and hit.show == "postrun show 1790000000000_aaaaa"
    )


def test_search_ranks_the_newest_matches_then_reaches_older_ones_in_scope(tmp_path: Path) -> None:
    db = tmp_path / "store" / "postrun.db"
    sessions = [f"179000000000{n}_ccccc" for n in range(6)]  # stored in this order: rowids grow
    _store(db, *sessions)
    with Database.open(db) as database:  # the first session's steps, another workspace's
        record = session_record(sessions[0], workspace={"root": "/w/old"})
        steps = [message_step(0, "Why does the parser fail?", role="user", session_id=sessions[0])]
        upsert_session(
            database, mapped_session(steps, session_id=sessions[0], session=record), now=STORED_AT, captured_on="h"
        )
    query = search_query("parser")

    def found(scope: recall.Scope, window: int, older: int) -> list[str]:
        return read_store(
            db,
            lambda d: [s.session_id for s in recall.found_steps(d, query, scope, limit=5, window=window, older=older)],
        )

    # 16 steps match: the first session's 1, then 3 of each other's. The newest 4 (the last
    # session's 3 and one of the one before) are ranked, then as many older ones as asked follow.
    assert len(found(recall.Scope(), window=4, older=0)) == 4
    assert found(recall.Scope(), window=4, older=1)[4] == sessions[4]
    assert found(recall.Scope(workspace="/w/old"), window=4, older=100) == [sessions[0]]
    assert found(recall.Scope(workspace="/w/old"), window=4, older=2) == []  # beyond the older matches read
    assert found(recall.Scope(workspace="/w/old", exclude=(sessions[0],)), window=4, older=100) == []
    everything = found(recall.Scope(), window=100, older=0)
    assert len(everything) == 5 and found(recall.Scope(agent="codex"), window=100, older=0) == []


def test_get_session_passes_its_model_and_agent_version_through_the_redactor(tmp_path: Path) -> None:
    token = "ghp_" + "K9mW2xQ7vL4pR8sT1nB6cY3dF5gH0jZ2aE7u"
    db = tmp_path / "store" / "postrun.db"
    session_id = "1790000000000_aaaaa"
    with Database.open(db) as database:
        record = session_record(session_id, agent={"kind": "cline", "version": f"4.1 {token}", "format_version": "1"})
        mapped = mapped_session([message_step(0, "hi", role="user", session_id=session_id)], session=record)
        mapped = dataclasses.replace(mapped, extras=dataclasses.replace(mapped.extras, model=f"custom/{token}"))
        upsert_session(database, mapped, now=STORED_AT, captured_on="host")
    overview = _recall(db, STORED_AT, tmp_path / "serve.json").get_session(session_id)
    assert (overview.model, overview.agent_version) == ("custom/[REDACTED:github_token]", "4.1 [REDACTED:github_token]")
