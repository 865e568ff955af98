"""``Database.open_reader`` on real SQLite files: it reads and changes nothing, whatever it is given."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from postrun.errors import StoreError, StoreTooNewError, StoreTooOldError
from postrun.exitcodes import ExitCode
from postrun.store.db import STORE_VERSION, Database, StoreMissing
from postrun.store.query import list_sessions
from postrun.store.write import upsert_session
from tests.support.builders import mapped_session, message_step, session_record
from tests.support.old_store import write_old_store

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def state(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file of ``folder``: its content's hash, mode and mtime."""
    return {
        path.name: (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode, path.stat().st_mtime_ns)
        for path in sorted(folder.iterdir())
    }


def stored(db: Path, *session_ids: str) -> None:
    with Database.open(db) as database:
        for session_id in session_ids:
            steps = [message_step(0, f"prompt of {session_id}", role="user", session_id=session_id)]
            session = session_record(session_id)
            upsert_session(
                database, mapped_session(steps, session_id=session_id, session=session), now=NOW, captured_on="testhost"
            )


def test_a_store_closed_by_its_writer_keeps_its_bytes_mtime_and_mode(tmp_path: Path) -> None:
    db = tmp_path / "postrun.db"
    stored(db, "1790000000000_one")
    db.chmod(0o644)  # loose: a writer would tighten it, a reader must not
    before = state(tmp_path)[db.name]
    with Database.open_reader(db) as reader:
        assert [s.id for s in list_sessions(reader)] == ["1790000000000_one"]
    assert state(tmp_path)[db.name] == before


def test_a_file_in_rollback_mode_gets_no_side_files_and_stays_in_that_mode(tmp_path: Path) -> None:
    db = tmp_path / "backup.db"
    stored(db, "1790000000000_one")
    connection = apsw.Connection(str(db))
    assert connection.execute("pragma journal_mode=delete").get == "delete"  # as `postrun backup` leaves its copies
    connection.close()
    before = state(tmp_path)
    with Database.open_reader(db) as reader:
        assert len(list_sessions(reader)) == 1
        assert str(reader.execute("pragma journal_mode").get) == "delete"
    assert state(tmp_path) == before


def test_a_reader_sees_each_commit_of_a_writer_that_holds_the_store(tmp_path: Path) -> None:
    db = tmp_path / "postrun.db"
    stored(db, "1790000000000_one")
    with Database.open(db) as writer, Database.open_reader(db) as reader:
        assert len(list_sessions(reader)) == 1
        steps = [message_step(0, "later", role="user", session_id="1790000000001_two")]
        session = session_record("1790000000001_two")
        upsert_session(
            writer,
            mapped_session(steps, session_id="1790000000001_two", session=session),
            now=NOW,
            captured_on="testhost",
        )
        assert len(list_sessions(reader)) == 2
        with pytest.raises(apsw.ReadOnlyError):
            reader.execute("DELETE FROM sessions")


def test_an_older_store_is_refused_with_how_to_upgrade_it_and_left_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    write_old_store(db, [mapped_session([message_step(0, "hi")])], version=2)
    before = state(tmp_path)
    with pytest.raises(StoreTooOldError) as caught:
        Database.open_reader(db)
    assert caught.value.exit_code == ExitCode.CONFIG
    assert str(caught.value) == (
        f"{db}: written by an older Postrun (store version 2, this Postrun reads version {STORE_VERSION});"
        " run postrun capture or postrun ingest once to upgrade it"
    )
    assert state(tmp_path) == before


def test_a_newer_store_and_another_program_s_database_are_refused_unchanged(tmp_path: Path) -> None:
    newer, foreign = tmp_path / "newer.db", tmp_path / "foreign.db"
    stored(newer, "1790000000000_one")
    with apsw.Connection(str(newer)) as connection:
        connection.execute(f"pragma user_version={STORE_VERSION + 1}")
    with apsw.Connection(str(foreign)) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")
    before = state(tmp_path)
    with pytest.raises(StoreTooNewError):
        Database.open_reader(newer)
    with pytest.raises(StoreError, match="not a Postrun store"):
        Database.open_reader(foreign)
    after = state(tmp_path)
    assert {name: after[name] for name in before} == before
    assert sorted(set(after) - set(before)) == ["newer.db-shm", "newer.db-wal"]  # WAL mode: SQLite's own


def test_no_store_is_created_for_a_reader(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "postrun.db"
    with pytest.raises(StoreMissing):
        Database.open_reader(missing)
    assert not missing.parent.exists()
    empty_file, empty_database = tmp_path / "empty.db", tmp_path / "blank.db"
    empty_file.touch()
    with apsw.Connection(str(empty_database)) as connection:  # SQLite's header, nothing in it
        connection.execute("CREATE TABLE t (x); DROP TABLE t")
    before = state(tmp_path)
    for path in (empty_file, empty_database):
        with pytest.raises(StoreMissing):
            Database.open_reader(path)
    assert state(tmp_path) == before
