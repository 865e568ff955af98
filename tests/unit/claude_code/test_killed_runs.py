"""A resume after a killed invocation: the repair lines the resumed process writes open its
segment only after a queued prompt (the generated real case i, changed one fact at a time)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.unit.claude_code.kit import FIXTURES, map_projects

CASE = FIXTURES / "claude-code-gen" / "i_killed_resumed"
SESSION = "c43d390f-2d44-41ba-9261-313aa3be164b"
SYNTHETIC = "62cdfae9-9900-4f14-89d1-7c0255cc38ce"  # "No response requested." (model <synthetic>)


def _changed(tmp_path: Path, change: object) -> dict[str, object]:
    projects = tmp_path / "projects"
    shutil.copytree(CASE / "claude" / "projects", projects)
    (transcript,) = projects.glob("*/*.jsonl")
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    kept = [record for record in (change(record) for record in records) if record is not None]  # type: ignore[operator]
    transcript.write_text("".join(json.dumps(record, separators=(",", ":")) + "\n" for record in kept))
    mapped, _ = map_projects(projects)
    session = mapped[SESSION]
    steps = {row.id: row.record for row in session.steps}
    return {"segments": len(session.segments), "role": steps[SYNTHETIC]["payload"]["role"],
            "api_requests": session.session["metrics"]["api_requests"]}  # fmt: skip


def test_as_written_the_repair_after_the_queued_prompt_opens_a_segment(tmp_path: Path) -> None:
    assert _changed(tmp_path, lambda record: record) == {"segments": 2, "role": "system", "api_requests": 3}


def test_an_api_error_notice_within_a_process_opens_no_segment(tmp_path: Path) -> None:
    def as_error(record: dict[str, object]) -> dict[str, object]:
        return {**record, "isApiErrorMessage": True} if record.get("uuid") == SYNTHETIC else record

    assert _changed(tmp_path, as_error) == {"segments": 1, "role": "system", "api_requests": 3}


def test_a_repair_with_no_prompt_queued_before_it_opens_no_segment(tmp_path: Path) -> None:
    def unqueued(record: dict[str, object]) -> dict[str, object] | None:
        queued = record.get("type") == "queue-operation" and record.get("content") == "I2-MARKER: go on."
        return None if queued else record

    assert _changed(tmp_path, unqueued) == {"segments": 1, "role": "system", "api_requests": 3}
