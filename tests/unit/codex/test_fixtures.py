"""Golden tests: every Codex case, mapped at the pure level, holds every fact of its expect.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.codex.kit import FIXTURES, HAND_CASES, REAL_CASES, assert_valid, check_expect, map_sessions_dir


@pytest.mark.parametrize("case", REAL_CASES + HAND_CASES, ids=lambda case: f"{case.parent.name}/{case.name}")
def test_case_maps_to_valid_records_holding_every_expected_fact(case: Path, tmp_path: Path) -> None:
    mapped, log = map_sessions_dir(case / "sessions")
    expected = json.loads((case / "expect.json").read_text())
    assert set(expected.get("sessions", {})) <= set(mapped), log
    for session in mapped.values():
        assert_valid(session)
    report = check_expect(case, mapped, log, tmp_path / "export")
    assert report == "", report


def test_an_interrupted_command_says_why_it_failed_though_its_item_has_no_output() -> None:
    # SIGINT mid-command: the item fails with exit -1 and an empty aggregated_output; only the
    # call's output ("Wall time: …\naborted by user") says what happened.
    case = FIXTURES / "codex-gen" / "n_interrupted"
    mapped, log = map_sessions_dir(case / "sessions")
    (session,) = mapped.values()
    (step,) = [row.record for row in session.steps if row.id == "call_n1_0"]
    assert (step["outcome"], step["payload"]["exit_code"], step["payload"]["stdout"]) == ("failed", -1, "")
    assert step["error"] == {"type": "tool_error", "message": "aborted by user"}, log
