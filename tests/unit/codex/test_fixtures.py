"""Golden tests: every Codex case, mapped at the pure level, holds every fact of its expect.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.codex.kit import HAND_CASES, REAL_CASES, assert_valid, check_expect, map_sessions_dir


@pytest.mark.parametrize("case", REAL_CASES + HAND_CASES, ids=lambda case: f"{case.parent.name}/{case.name}")
def test_case_maps_to_valid_records_holding_every_expected_fact(case: Path, tmp_path: Path) -> None:
    mapped, log = map_sessions_dir(case / "sessions")
    expected = json.loads((case / "expect.json").read_text())
    assert set(expected.get("sessions", {})) <= set(mapped), log
    for session in mapped.values():
        assert_valid(session)
    report = check_expect(case, mapped, log, tmp_path / "export")
    assert report == "", report
