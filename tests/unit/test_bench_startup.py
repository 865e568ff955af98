"""The bench's start-up floor (``bench.workfloor.Startup``): the least wall time any ingest can take
with its start-up, now that ingest processes prepare while the writer starts."""

from __future__ import annotations

import pytest

from bench.workfloor import Startup


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
