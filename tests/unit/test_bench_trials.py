"""The bench's trials: a cold ingest against its work floor, the two timed back to back."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from bench.history import write_history
from bench.proc import Finished, isolated_env
from bench.trials import Trial, Trials, measure_trials
from bench.workfloor import Startup, WorkFloor

_STARTUP = Startup(writer_seconds=0.3, version_seconds=0.05, process_seconds=0.1)


def _trial(wall: float, floor_cpu: float, startup: Startup = _STARTUP) -> Trial:
    cold = Finished(returncode=0, wall_seconds=wall, cpu_seconds=wall * 1.5, max_rss_bytes=0, stdout="", stderr="")
    return Trial(
        cold, WorkFloor(10, floor_cpu - 0.5, 0.2, 0.3), sqlite_seconds=0.0, inline_cpu_seconds=wall, startup=startup
    )


def test_the_figure_is_the_trial_whose_ratio_is_the_median_not_the_first_nor_the_fastest() -> None:
    slow_minute = _trial(wall=5.0, floor_cpu=5.0)  # 2.0x: timed while the machine ran slow
    middle = _trial(wall=4.0, floor_cpu=5.6)  # 1.43x
    fastest = _trial(wall=3.0, floor_cpu=5.0)  # 1.2x
    trials = Trials((slow_minute, middle, fastest), cores=2)

    assert trials.median is middle
    assert trials.median.ratio(2) == pytest.approx(4.0 / 2.8)
    assert trials.describe() == "5.00 / 2.50 / 2.00×; 4.00 / 2.80 / 1.43×; 3.00 / 2.50 / 1.20×"
    assert Trials((slow_minute, fastest), cores=2).median is fastest  # of an even count, the lower


def test_the_floor_with_the_start_up_is_the_trials_own_so_both_share_its_pace() -> None:
    slow = Startup(writer_seconds=0.4, version_seconds=0.07, process_seconds=0.15)
    trial = _trial(wall=2.0, floor_cpu=2.0, startup=slow)

    assert trial.started_floor_seconds(2) == pytest.approx(0.15 + (2.0 + 0.4 - 0.15) / 2)
    assert trial.overhead(2).startup_seconds == 0.4


def test_what_would_move_a_missed_ratio_is_said_only_where_the_start_up_does_not_rule_it_out() -> None:
    within_reach = _trial(wall=4.0, floor_cpu=5.6)  # 1.43×; start-up and floor together 1.07×
    assert "to meet ≤ 1.3× the pipeline's parts" in within_reach.where_it_goes(2, 1.3)
    assert "to meet" not in _trial(wall=3.0, floor_cpu=5.0).where_it_goes(2, 1.3)  # 1.2×: met
    # A floor of 0.4 s on 2 cores: the start-up alone makes it 1.5×; the verdict beside says so.
    ruled_out = _trial(wall=1.0, floor_cpu=0.8)
    assert ruled_out.startup.rules_out(ruled_out.floor_seconds(2), 2, 1.3)
    assert ruled_out.where_it_goes(2, 1.3) == ruled_out.overhead(2).describe()


def test_each_trial_stores_every_session_into_a_fresh_store_and_measures_its_floors(tmp_path: Path) -> None:
    root = tmp_path / "cline" / "sessions"
    written = write_history(root, seed=5, sessions=3, mean_turns=1).written
    env = isolated_env(tmp_path / "home", db=tmp_path / "store" / "postrun.db", cline_dir=root)
    ids = [s.session_id for s in written]

    found = measure_trials("cline", root, ids, env, sessions=3, count=2, cores=2, workdir=tmp_path / "trials")

    assert len(found.trials) == 2
    assert not (tmp_path / "store" / "postrun.db").exists()  # the shape's own store is not touched
    for number, trial in enumerate(found.trials):
        connection = apsw.Connection(str(tmp_path / "trials" / f"trial-{number}" / "postrun.db"))
        try:
            assert sorted(str(row[0]) for row in connection.execute("SELECT id FROM sessions")) == sorted(ids)
        finally:
            connection.close()
        assert trial.work.steps == sum(s.messages for s in written)
        assert trial.sqlite_seconds > 0 and trial.inline_cpu_seconds > 0 and trial.cold.wall_seconds > 0
        # Measured, not compared with the cold ingest: on a loaded machine an empty folder's
        # ingest may take as long as one of three one-turn sessions.
        startup = trial.startup
        assert startup.process_seconds > 0 and startup.version_seconds > 0 and 0 < startup.writer_seconds < 60
    with pytest.raises(RuntimeError, match="3 of 4"):
        measure_trials("cline", root, ids, env, sessions=4, count=1, cores=2, workdir=tmp_path / "again")
