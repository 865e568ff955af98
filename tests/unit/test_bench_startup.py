"""The bench's start-up floor (``bench.workfloor.Startup``): the least wall time any ingest can take
with its start-up, now that ingest processes prepare while the writer starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.overhead import Overhead
from bench.proc import Finished, postrun_command
from bench.workfloor import Startup, startup_floor, writer_env


def test_nothing_is_prepared_before_an_interpreter_imported_what_preparing_needs() -> None:
    # 0.1 s before any session can be prepared; then the writer's other 0.2 s of start-up and
    # the floor's 2 s of CPU spread over 2 cores.
    startup = Startup(writer_seconds=0.3, version_seconds=0.05, process_seconds=0.1)
    assert startup.floor_with(1.0, 2) == pytest.approx(0.1 + (2.0 + 0.3 - 0.1) / 2)
    assert startup.floor_with(1.0, 1) == pytest.approx(1.3)  # one core: the start-up is all before the floor


def test_the_verdict_says_out_of_reach_only_above_the_target() -> None:
    startup = Startup(writer_seconds=0.3, version_seconds=0.05, process_seconds=0.1)
    assert "the rest is the pipeline's" in startup.against(1.0, 2, 1.3)  # 1.20× the floor
    assert "no ingest of this size can meet the target" in startup.against(0.5, 2, 1.3)  # 1.40×


def test_out_of_reach_says_from_which_work_floor_the_start_up_no_longer_rules_the_target_out() -> None:
    # Issue 27's done-when asks, per missed figure, for the floor that makes it impossible and
    # what would move it: "of this size" alone read as the shape being out of reach. The
    # start-up adds 0.1 + 0.2 / 2 = 0.2 s to any work floor: 0.2 / 0.3 = 0.67 s reaches 1.3×.
    startup = Startup(writer_seconds=0.3, version_seconds=0.05, process_seconds=0.1)
    verdict = startup.against(0.5, 2, 1.3)
    assert "from a work floor of 0.67 s (1.33× this one) the start-up no longer rules it out" in verdict
    assert startup.floor_with(0.2 / 0.3, 2) / (0.2 / 0.3) == pytest.approx(1.3)


def test_the_writers_start_up_counts_as_the_cpu_it_takes_not_its_wall_time(tmp_path: Path) -> None:
    # On a loaded machine an empty ingest took 0.52 s of wall for about 0.3 s of CPU: counted
    # as work a core must do, the wait for a core raised the floor with the start-up (then no
    # longer a least wall time) and made the bookkeeping beside it negative.
    loaded = Startup(writer_seconds=1.0, version_seconds=0.05, process_seconds=0.1, writer_cpu_seconds=0.3)
    assert loaded.floor_with(1.0, 2) == pytest.approx(0.1 + (2.0 + 0.3 - 0.1) / 2)
    cold = Finished(returncode=0, wall_seconds=2.0, cpu_seconds=3.0, max_rss_bytes=0, stdout="", stderr="")
    assert Overhead.of(cold, 2.5, 2.0, loaded, 2).parts()["bookkeeping"] == pytest.approx((2.5 - 0.3 - 2.0) / 2)

    measured = startup_floor(postrun_command(), tmp_path, repeats=1)
    assert measured.writer_cpu_seconds is not None and 0 < measured.writer_cpu_seconds < 60


def test_the_writers_start_up_is_measured_without_ingest_processes(tmp_path: Path) -> None:
    """``postrun ingest`` starts its ingest processes as it starts, and ``wait4`` counts their
    CPU in the writer's: its start-up then held their imports, which the bound counts apart
    (``process_seconds``) too."""
    assert writer_env(tmp_path, tmp_path / "sessions")["POSTRUN_INGEST_PROCESSES"] == "0"
