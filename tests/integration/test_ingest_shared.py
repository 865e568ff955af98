"""Sessions stored a few at a time under one savepoint, on a real store: when one fails, only it
is left out, as when each had a savepoint of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from postrun.agents.cline import list_sessions
from postrun.ingest import batches, shared
from postrun.ingest.ingester import Ingester, IngestOutcome
from postrun.ingest.shared import Shared
from postrun.store.db import Database
from tests.reliability.kit import write_synthetic


class Broken(Exception):
    pass


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    with Database.open(tmp_path / "store.db") as opened:
        opened.execute("CREATE TABLE written (name TEXT NOT NULL)")
        yield opened


def writes(database: Database, name: str, *, fails: Callable[[], bool] = lambda: False) -> Callable[[], str]:
    """A session's store: one row in its own part, then failing when ``fails()`` says so."""

    def attempt() -> str:
        with database.transaction() as connection:
            connection.execute("INSERT INTO written (name) VALUES (?)", (name,))
            if fails():
                raise Broken(name)
        return name

    def caught() -> str:  # as ``batches._store_mapped`` does: a failure is the session's result
        try:
            return attempt()
        except Broken:
            return f"{name} failed"

    return caught


def written(database: Database) -> list[str]:
    return [str(name) for (name,) in database.execute("SELECT name FROM written ORDER BY rowid")]


def test_a_failure_rolls_back_the_shared_savepoint_and_stores_each_session_again_on_its_own(
    database: Database,
) -> None:
    group: Shared[str] = Shared(database)
    with database.transaction():
        for index, name in enumerate(["a", "b", "c"]):
            group.store(index, name, 0, writes(database, name, fails=lambda name=name: name == "b"))
        assert group.due()  # "b" failed: nothing more is stored under it
        assert group.ended() == [(0, "a"), (1, "b failed"), (2, "c")]
    assert written(database) == ["a", "c"]


def test_sessions_share_a_savepoint_until_it_holds_enough(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared, "SHARED_SESSIONS", 3)
    statements: list[str] = []
    database.connection.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    group: Shared[str] = Shared(database)
    with database.transaction():
        for index in range(3):
            assert not group.due()
            group.store(index, str(index), 100, writes(database, str(index)))
        assert group.due()
        assert [name for _, name in group.ended()] == ["0", "1", "2"]
    assert [sql for sql in statements if "SAVEPOINT" in sql or "RELEASE" in sql] == [
        "SAVEPOINT shared",
        "RELEASE shared",
    ]
    assert written(database) == ["0", "1", "2"]


def test_a_store_fault_met_storing_a_session_again_leaves_out_that_one(database: Database) -> None:
    """What the others gave is what a batched ingest reports as rolled back with the transaction."""
    calls = {"b": 0}

    def b_fails() -> bool:
        calls["b"] += 1
        if calls["b"] == 2:  # stored again on its own: the store fails now
            raise apsw.IOError("disk I/O error")
        return True

    group: Shared[str] = Shared(database)
    with pytest.raises(apsw.IOError), database.transaction():
        group.store(0, "a", 0, writes(database, "a"))
        group.store(1, "b", 0, writes(database, "b", fails=b_fails))
        try:
            group.ended()
        finally:
            assert group.storing_again == "b"
            assert group.abandoned() == [(0, "a")]
            group.close()
    assert written(database) == []


def test_a_batched_ingest_of_more_sessions_than_share_a_savepoint_stores_every_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared, "SHARED_SESSIONS", 4)
    monkeypatch.setattr(batches, "BATCH_SECONDS", 60.0)
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 10, grows=2)
    sessions = list_sessions(root).sessions
    with Database.open(tmp_path / "batched.db") as database:
        results = list(batches.ingest_all(Ingester(database, max_bytes=2**26), sessions))
        assert [r.session_id for r in results] == [s.session_id for s in sessions]
        assert all(isinstance(r, IngestOutcome) and r.status == "ingested" for r in results)
        assert database.execute("SELECT count(*) FROM sessions").get == 10
