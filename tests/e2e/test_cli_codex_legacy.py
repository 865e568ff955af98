"""The real `postrun` executable over rollouts from before items, as older Codex CLIs wrote them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_postrun
from tests.support.codex_legacy import AGENTS_MD, PATCH, LegacyRollout, instructions_then_prompt, pre_envelope_rollout

SID = "0199b000-1111-7222-8333-4444555566e1"


def _stored(sessions: Path, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the session's `sessions --json` row, its export) after an ingest of ``sessions``."""
    result = run_postrun("ingest", "--agent", "codex", str(sessions), env=env)
    assert result.returncode == 0, result.stderr
    listed = json.loads(run_postrun("sessions", "--json", env=env).stdout)
    exported = json.loads(run_postrun("export", SID, env=env).stdout)
    return next(row for row in listed if row["id"] == SID), exported


def test_the_project_instructions_are_not_the_title(tmp_path: Path, env: dict[str, str]) -> None:
    # Codex injects AGENTS.md as a user message headed "# AGENTS.md instructions for <dir>":
    # it is no prompt, so neither the first turn nor the session's title.
    instructions_then_prompt(SID).write(tmp_path / "sessions")
    row, exported = _stored(tmp_path / "sessions", env)
    assert row["title"] == "MARK: fix the bug"
    assert [turn["prompt_id"] for turn in exported["turns"] if turn["index"]] == ["line-4"]
    assert exported["steps"][0]["payload"] == {"role": "system", "text": AGENTS_MD}


def test_a_patch_that_did_not_apply_is_stored_failed(tmp_path: Path, env: dict[str, str]) -> None:
    # An older Codex answered apply_patch as a shell call: {"output", "metadata": {"exit_code": 1}}.
    root = LegacyRollout(SID)
    root.turn_context()
    root.user("MARK: patch a.py")
    root.patch("p1", PATCH, 1, "context mismatch")
    root.write(tmp_path / "sessions")
    row, exported = _stored(tmp_path / "sessions", env)
    step = next(step for step in exported["steps"] if step["id"] == "p1")
    assert (step["outcome"], step["error"]) == ("failed", {"type": "tool_error", "message": "context mismatch"})
    assert row["failed_steps"] == 1


def test_a_call_a_killed_run_left_is_failed_once_the_next_prompt_came(tmp_path: Path, env: dict[str, str]) -> None:
    root = LegacyRollout(SID)
    root.turn_context()
    root.user("MARK: run the tests")
    root.shell("c1", "sleep 600", None, "")
    root.turn_context()
    root.user("MARK: again")
    root.shell("c2", "ls", 0, "a\n")
    root.write(tmp_path / "sessions")
    _, exported = _stored(tmp_path / "sessions", env)
    step = next(step for step in exported["steps"] if step["id"] == "c1")
    assert (step["outcome"], step["error"]["message"]) == ("failed", "no result recorded; turn ended")


def test_an_output_codex_cut_is_stored_reference_only(tmp_path: Path, env: dict[str, str]) -> None:
    # An older Codex answered with the head and tail of a long output, "Total output lines: N"
    # first: the stdout kept is partial, the rest is nowhere on disk.
    cut = "Total output lines: 35000\n\n1\n2\n[... omitted 34996 of 35000 lines ...]\n\n34999\n35000\n"
    root = LegacyRollout(SID)
    root.turn_context()
    root.user("MARK: count")
    root.shell("c1", "seq 1 35000", 0, cut)
    root.shell("c2", "ls", 0, "a\n")
    root.write(tmp_path / "sessions")
    _, exported = _stored(tmp_path / "sessions", env)
    steps = {step["id"]: step for step in exported["steps"]}
    assert (steps["c1"]["content_status"], steps["c1"]["payload"]["stdout"]) == ("reference_only", cut)
    assert steps["c2"]["content_status"] == "inline"


def test_a_rollout_from_before_the_envelope_is_ingested(tmp_path: Path, env: dict[str, str]) -> None:
    # Codex of mid 2025 wrote a bare header and bare items: a rollout without items, whose
    # messages and calls are read from its history (README), not "not a Codex rollout".
    pre_envelope_rollout(tmp_path / "sessions", SID)
    row, exported = _stored(tmp_path / "sessions", env)
    assert row["title"] == "MARK: list"
    assert [step["id"] for step in exported["steps"]] == ["line-2", "line-3", "rs_1", "c1", "msg_1"]
