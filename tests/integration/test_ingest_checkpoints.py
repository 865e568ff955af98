"""A batched ingest's commits leave the WAL's checkpoint to a thread beside the writer; between
its batches the writer checkpoints as usual, and the thread ends with the batched ingest."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from postrun.agents.cline import list_sessions
from postrun.ingest import batches
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.reliability.kit import differences, read_records, store_problems, write_synthetic

MAX_BYTES = 64 * 2**20


def checkpoint_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "postrun-checkpoints"]


def test_a_thread_checkpoints_what_each_batch_committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "BATCH_SECONDS", 0.0)  # each session its own transaction
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 6, grows=30)
    db = tmp_path / "store.db"
    with Database.open(db) as database:
        before = db.stat().st_size
        committed = batches.committed_batches(Ingester(database, max_bytes=MAX_BYTES), list_sessions(root).sessions)
        first = next(committed)
        assert len(first) == 1 and len(checkpoint_threads()) == 1
        # Between two batches the writer checkpoints as it always does (capture's live work).
        assert database.execute("pragma wal_autocheckpoint").get == 1000
        # Only a checkpoint writes the database file in WAL mode; the writer made none.
        deadline = time.monotonic() + 30
        while db.stat().st_size <= before:
            assert time.monotonic() < deadline, "the first batch was never checkpointed"
            time.sleep(0.01)
        rest = [placed for results in committed for placed in results]
        assert len(rest) == 5
        assert checkpoint_threads() == []
        assert database.execute("pragma wal_autocheckpoint").get == 1000
    in_line = tmp_path / "in-line.db"
    with Database.open(in_line) as database:
        list(batches.ingest_all(Ingester(database, max_bytes=MAX_BYTES), list_sessions(root).sessions))
    assert differences(read_records(db), read_records(in_line)) == []
    assert store_problems(db) == []


def test_a_batched_ingest_abandoned_between_batches_ends_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches, "BATCH_SECONDS", 0.0)
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 3, grows=3)
    with Database.open(tmp_path / "store.db") as database:
        committed = batches.committed_batches(Ingester(database, max_bytes=MAX_BYTES), list_sessions(root).sessions)
        next(committed)
        assert len(checkpoint_threads()) == 1
        committed.close()  # capture abandons a catch-up this way
        assert checkpoint_threads() == []
        assert database.execute("pragma wal_autocheckpoint").get == 1000


def test_the_transaction_before_the_last_commits_early_so_that_the_last_is_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last transaction's pages are checkpointed after the work: the one before it commits
    once the sessions left are at most ``TAIL_SHARE`` of those it holds, and never again."""
    monkeypatch.setattr(batches, "BATCH_SECONDS", 600.0)  # no transaction ends on time
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 36, grows=3)
    sessions = list_sessions(root).sessions
    with Database.open(tmp_path / "store.db") as database:
        committed = list(batches.committed_batches(Ingester(database, max_bytes=MAX_BYTES), sessions))
    # Thirty stored, six left: 6 <= 0.2 * 30. Not again in the last (at five, 1 <= 0.2 * 5).
    assert [len(results) for results in committed] == [30, 6]
    monkeypatch.setattr(batches, "TAIL_SHARE", 0.0)
    with Database.open(tmp_path / "one.db") as database:
        committed = list(batches.committed_batches(Ingester(database, max_bytes=MAX_BYTES), sessions))
    assert [len(results) for results in committed] == [36]
    assert differences(read_records(tmp_path / "store.db"), read_records(tmp_path / "one.db")) == []
