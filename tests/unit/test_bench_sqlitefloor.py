"""The bench's SQLite floor: the CPU SQLite takes to write a slice's stored rows."""

from __future__ import annotations

from pathlib import Path

from bench.history import write_history
from bench.proc import ingest_fresh, isolated_env, stored_ids
from bench.sqlitefloor import sqlite_floor


def test_the_sqlite_floor_is_the_cpu_sqlite_takes_not_its_wait_for_the_disk(tmp_path: Path) -> None:
    # Issue 27: the work floor is "the measured CPU of the unskippable work ÷ cores". The
    # SQLite part was its wall time, which also holds the syncs of the WAL and the checkpoint
    # (about a fifth of it here): no core's work, and an ingest overlaps it with its other work.
    root = tmp_path / "cline" / "sessions"
    written = write_history(root, seed=5, sessions=3, mean_turns=1).written
    db = tmp_path / "store" / "postrun.db"
    env = isolated_env(tmp_path / "home", db=db, cline_dir=root)
    cold = ingest_fresh([str(s.messages_path.parent) for s in written], env, kind="cline", db=db, sessions=3)

    floor = sqlite_floor(db, stored_ids(cold, "cline"), scratch=tmp_path / "scratch", repeats=3)

    # Each pass's CPU span lies inside its wall span, so their medians keep that order.
    assert 0 < floor.cpu_seconds <= floor.wall_seconds
