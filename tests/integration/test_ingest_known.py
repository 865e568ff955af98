"""A live re-ingest compares its steps and turns against the digests its own last write left
(``postrun.ingest.known``) instead of reading them back, and reads them back whenever anything
else wrote to the store since: another connection, or another writer on its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.reliability.kit import Synthetic, read_records, synthetic_id

DIGESTS = "SELECT id, digest FROM steps WHERE session_id = ?"
TURN_DIGESTS = "SELECT id, digest FROM turns WHERE session_id = ?"


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    with Database.open(tmp_path / "store" / "postrun.db") as db:
        yield db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "cline" / "sessions"


def digest_reads(database: Database) -> list[str]:
    """The statements the store's connection runs that read a session's digests back (from now on)."""
    seen: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        if sql in (DIGESTS, TURN_DIGESTS):
            seen.append(sql)
        return True

    database.connection.exec_trace = trace
    return seen


def one_shot(tmp_path: Path, root: Path, session: Synthetic) -> tuple[object, ...]:
    """The session's steps and turns as a fresh store holds them after one ingest of its files now."""
    with Database.open(tmp_path / "fresh" / "postrun.db") as fresh:
        Ingester(fresh, max_bytes=2**26).ingest(SessionLocation.in_root(root, session.session_id))
        return stored(fresh, session)


def stored(database: Database, session: Synthetic) -> tuple[object, ...]:
    records = read_records(database.path)[session.session_id]
    return records.steps, records.turns


def live_session(root: Path, database: Database, index: int) -> tuple[Ingester, Synthetic, SessionLocation, object]:
    ingester = Ingester(database, max_bytes=2**26)
    session = Synthetic(synthetic_id(index), seed=index)
    for _ in range(6):
        session.grow()
    session.write(root)
    location = SessionLocation.in_root(root, session.session_id)
    _, cache = ingester.ingest(location, live=True)
    return ingester, session, location, cache


def test_a_live_reingest_after_its_own_write_does_not_read_the_digests_back(
    tmp_path: Path, root: Path, database: Database
) -> None:
    ingester, session, location, cache = live_session(root, database, 1)
    reads = digest_reads(database)
    for _ in range(3):
        session.grow()
        session.write(root)
        outcome, cache = ingester.ingest(location, cache, live=True)
        assert outcome.status == "updated" and outcome.rows_written <= 4
    assert reads == []
    assert stored(database, session) == one_shot(tmp_path, root, session)


def test_live_reingests_through_a_restore_and_an_edit_keep_the_store_one_shot(
    tmp_path: Path, root: Path, database: Database
) -> None:
    # Each write leaves what is known for the next: steps removed, changed and added.
    ingester, session, location, cache = live_session(root, database, 3)
    reads = digest_reads(database)
    changes = (session.restore, session.grow, session.edit_earlier, session.grow, session.restore, session.grow)
    for k, change in enumerate(changes):
        change()
        session.write(root)
        _, cache = ingester.ingest(location, cache, live=True)
        assert stored(database, session) == one_shot(tmp_path / str(k), root, session)
    assert reads == []


def _meddle(connection: Any, session_id: str) -> None:
    connection.execute("DELETE FROM steps WHERE session_id = ? AND seq = 0", (session_id,))
    connection.execute("UPDATE turns SET record = '{}', digest = 'x' WHERE session_id = ? AND idx = 1", (session_id,))


def other_connection(database: Database, session_id: str) -> None:
    with Database.open(database.path) as other, other.transaction() as connection:
        _meddle(connection, session_id)


def same_connection(database: Database, session_id: str) -> None:
    with database.transaction() as connection:
        _meddle(connection, session_id)


@pytest.mark.parametrize("meddle", [other_connection, same_connection])
def test_a_write_by_anyone_else_since_makes_it_read_the_digests_back(
    tmp_path: Path, root: Path, database: Database, meddle: Callable[[Database, str], None]
) -> None:
    """A step removed and a turn spoilt behind the ingester's back (by another connection, or by
    another writer on its own) are stored again by the next live re-ingest, as a one-shot ingest
    would have them."""
    ingester, session, location, cache = live_session(root, database, 2)
    meddle(database, session.session_id)
    reads = digest_reads(database)
    session.grow()
    session.write(root)
    _, cache = ingester.ingest(location, cache, live=True)
    assert stored(database, session) == one_shot(tmp_path, root, session)
    assert reads == [TURN_DIGESTS, DIGESTS]
    session.grow()
    session.write(root)
    ingester.ingest(location, cache, live=True)
    assert reads == [TURN_DIGESTS, DIGESTS]  # known again from that write on


def test_an_ingest_that_is_not_live_forgets_what_was_known(root: Path, database: Database) -> None:
    ingester, session, location, cache = live_session(root, database, 3)
    session.grow()
    session.write(root)
    ingester.ingest(location)  # `postrun ingest`, a start-up pass
    reads = digest_reads(database)
    session.grow()
    session.write(root)
    ingester.ingest(location, cache, live=True)
    assert reads == [TURN_DIGESTS, DIGESTS]
