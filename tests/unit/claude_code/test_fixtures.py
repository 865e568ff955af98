"""Golden tests: every Claude Code case, mapped at the pure level, holds every fact of its expect.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.claude_cases import BUILDERS, build
from tests.support.claude_cases import CASES as MADE
from tests.unit.claude_code.kit import CASES, assert_valid, check_expect, map_projects


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.parent.name}/{case.name}")
def test_case_maps_to_valid_records_holding_every_expected_fact(case: Path, tmp_path: Path) -> None:
    mapped, log = map_projects(case / "claude" / "projects")
    for session in mapped.values():
        assert_valid(session)
    expected = json.loads((case / "expect.json").read_text())
    assert set(expected.get("sessions", {})) <= set(mapped)
    report = check_expect(case, mapped, log, tmp_path / "export")
    assert report == "", report


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.parent.name}/{case.name}")
def test_case_actors_segments_and_links_are_as_expected(case: Path) -> None:
    """The facts expect.json gives beyond what the shared checker reads: actors and segment times."""
    mapped, _ = map_projects(case / "claude" / "projects")
    for session_id, expected in json.loads((case / "expect.json").read_text())["sessions"].items():
        session = mapped[session_id]
        if "actors" in expected:
            assert session.actors == [{"label": "claude-code", **expected["actors"][0]}, *expected["actors"][1:]]
        for want in expected.get("segments_detail", []):
            got = session.segments[want["index"]]
            assert {key: got.get(key) for key in want} == want
        steps = {row.id: row.record for row in session.steps}
        for step_id, actor_id in expected.get("spawned", {}).items():
            assert steps[step_id]["payload"]["raw"]["actor_id"] == actor_id


def test_made_cases_are_as_built(tmp_path: Path) -> None:
    """The hand-made cases' files are what ``tests.support.claude_cases`` builds (run it after a change)."""
    for name in BUILDERS:
        build(name, tmp_path / name)
        made = MADE / name / "claude" / "projects"
        built = sorted(path.relative_to(tmp_path / name) for path in (tmp_path / name).rglob("*") if path.is_file())
        assert built == sorted(path.relative_to(made) for path in made.rglob("*") if path.is_file())
        for relative in built:
            assert (tmp_path / name / relative).read_bytes() == (made / relative).read_bytes(), relative
