"""The bench's account of a cold ingest's wall time beyond its work floor."""

from __future__ import annotations

import math
from pathlib import Path

import apsw
import pytest

from bench.history import write_history
from bench.overhead import Overhead, measure_inline
from bench.proc import isolated_env


def test_the_parts_add_up_to_the_wall_time_and_each_is_its_own_difference() -> None:
    figures = Overhead(
        wall_seconds=3.0, cpu_seconds=5.4, inline_cpu_seconds=4.8, floor_cpu_seconds=3.8, startup_seconds=0.2, cores=2
    )
    parts = figures.parts()
    assert math.isclose(sum(parts.values()), 3.0)
    assert parts == pytest.approx(
        {"work floor": 1.9, "start-up": 0.1, "bookkeeping": 0.4, "processes": 0.3, "idle cores": 0.3}
    )
    assert figures.describe().startswith("wall 3.00 s = work floor 1.90 s, start-up 0.10 s, bookkeeping 0.40 s,")


def test_a_missed_ratio_says_how_far_the_pipelines_parts_would_have_to_shrink() -> None:
    # Work floor 1.9 s, start-up 0.1 s: ≤ 1.3× leaves the bookkeeping, processes and idle
    # cores 1.3 × 1.9 - 1.9 - 0.1 = 0.47 s of the 1.0 s they took.
    figures = Overhead(
        wall_seconds=3.0, cpu_seconds=5.4, inline_cpu_seconds=4.8, floor_cpu_seconds=3.8, startup_seconds=0.2, cores=2
    )
    assert figures.to_meet(1.3) == (
        "to meet ≤ 1.3× the pipeline's parts (bookkeeping, processes, idle cores: 1.00 s) would have to take"
        " at most 0.47 s, 53% less"
    )
    assert figures.to_meet(1.6) == ""  # 3.0 s ≤ 1.6 × 1.9 s: met, nothing to say
    slow_start = Overhead(
        wall_seconds=3.0, cpu_seconds=5.4, inline_cpu_seconds=4.8, floor_cpu_seconds=3.8, startup_seconds=1.2, cores=2
    )
    assert "the start-up alone takes more" in slow_start.to_meet(1.3)


def test_the_in_line_ingest_stores_every_session_into_a_store_of_its_own(tmp_path: Path) -> None:
    root = tmp_path / "cline" / "sessions"
    written = write_history(root, seed=5, sessions=3, mean_turns=1).written
    env = isolated_env(tmp_path / "home", db=tmp_path / "store" / "postrun.db", cline_dir=root)
    folders = [str(s.messages_path.parent) for s in written]
    inline_db = tmp_path / "inline" / "postrun.db"

    finished = measure_inline(folders, env, kind="cline", db=inline_db, sessions=3)

    assert finished.cpu_seconds > 0
    assert not (tmp_path / "store" / "postrun.db").exists()  # the cold ingest's store is not touched
    connection = apsw.Connection(str(inline_db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        stored = sorted(str(row[0]) for row in connection.execute("SELECT id FROM sessions"))
    finally:
        connection.close()
    assert stored == sorted(s.session_id for s in written)
    with pytest.raises(RuntimeError, match="3 of 4"):
        measure_inline(folders, env, kind="cline", db=inline_db, sessions=4)
