"""The one guarded write: what decides whether a session may be written is read inside the
transaction that writes it, so a forget (or an exclude) that commits while the session is read
and mapped wins over the ingest, on a real store with a second connection doing the forget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation
from postrun.errors import Forgotten
from postrun.ingest.batches import ingest_all
from postrun.ingest.ingester import Ingester, IngestFailure
from postrun.review.apply import Flagged, FlagMemo
from postrun.store.db import Database
from postrun.store.forget import forget_sessions
from tests.reliability.kit import Synthetic, synthetic_id

SESSION = synthetic_id(0)


class ForgetWhileMapping(FlagMemo):
    """Forgets the session through another connection once it is mapped and flagged: between the
    ingest's read of the store and its write, as a `postrun forget` committing at that moment."""

    def __init__(self, db: Path) -> None:
        super().__init__()
        self.db = db
        self.forgot = False

    def keep(self, session_id: str, flagged: Flagged) -> None:
        super().keep(session_id, flagged)
        if session_id == SESSION and not self.forgot:
            self.forgot = True
            with Database.open(self.db) as other:
                forget_sessions(other, [session_id], now="2026-12-01T10:00:00Z")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store" / "postrun.db"


@pytest.fixture
def location(tmp_path: Path, db: Path) -> Iterator[SessionLocation]:
    """A stored session that then changed: its next ingest reads, maps and writes it."""
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(SESSION, seed=3)
    session.grow()
    session.write(root)
    where = SessionLocation.in_root(root, SESSION)
    with Database.open(db) as database:
        Ingester(database, max_bytes=2**26).ingest(where)
    session.grow()
    session.write(root)
    yield where


def left_of(db: Path) -> dict[str, object]:
    with Database.open(db) as database:
        count = {
            table: int(database.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", (SESSION,)).get)
            for table, column in (
                ("sessions", "id"),
                ("steps", "session_id"),
                ("history", "session_id"),
                ("raw_files", "session_id"),
            )
        }
        ops = [op for (op,) in database.execute("SELECT op FROM mirror_outbox WHERE session_id = ?", (SESSION,))]
        tombstoned = database.execute("SELECT 1 FROM tombstones WHERE session_id = ?", (SESSION,)).fetchone()
    return {**count, "outbox": ops, "tombstone": tombstoned is not None}


FORGOTTEN = {
    "sessions": 0,
    "steps": 0,
    "history": 0,
    "raw_files": 0,
    "outbox": ["delete"],
    "tombstone": True,
}


def test_a_forget_committed_while_a_live_ingest_maps_the_session_wins(db: Path, location: SessionLocation) -> None:
    memo = ForgetWhileMapping(db)
    with Database.open(db) as database:
        ingester = Ingester(database, max_bytes=2**26, flag_memo=memo, raw_copy_seconds=300)
        with pytest.raises(Forgotten):
            ingester.ingest(location, live=True)
    assert memo.forgot
    assert left_of(db) == FORGOTTEN


def test_a_forget_committed_while_a_batched_ingest_maps_the_session_wins(db: Path, location: SessionLocation) -> None:
    memo = ForgetWhileMapping(db)
    with Database.open(db) as database:
        ingester = Ingester(database, max_bytes=2**26, flag_memo=memo)
        (result,) = list(ingest_all(ingester, [location]))
    assert memo.forgot
    assert isinstance(result, IngestFailure) and isinstance(result.error, Forgotten)
    assert left_of(db) == FORGOTTEN


def test_force_writes_over_a_forget_committed_meanwhile_and_lifts_its_tombstone(
    db: Path, location: SessionLocation
) -> None:
    with Database.open(db) as database:
        outcome, _ = Ingester(database, max_bytes=2**26, flag_memo=ForgetWhileMapping(db)).ingest(location, force=True)
    assert outcome.revived and outcome.status == "ingested"
    left = left_of(db)
    # The forget's delete stays queued: the mirror drops every version it holds, then gets the
    # session whole, as stored again.
    assert (left["sessions"], left["tombstone"], left["outbox"]) == (1, False, ["delete"])
