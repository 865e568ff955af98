"""What Codex answered a call (codex.md §5.3, §5.4): the per-call fallback, and a declined item."""

from __future__ import annotations

from pathlib import Path

from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import mapped_cleanly

SID = "01a2330d-0000-7000-8000-0000000000f5"


def test_a_patch_the_apply_patch_tool_would_not_apply_failed(tmp_path: Path) -> None:
    # Codex answers a patch that does not verify with "apply_patch verification failed: ..."
    # and writes no FileChange: nothing landed, so the step must not read ok.
    root = RolloutWriter(SID)
    root.begin("t1")
    root.user("u1", "MARK: patch", "t1")
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
    custom = {"type": "custom_tool_call", "status": "completed", "call_id": "p1", "name": "apply_patch"}
    root.response({**custom, "input": patch}, "t1")
    answer = "apply_patch verification failed: Failed to find expected lines in a.py:\nx"
    root.response({"type": "custom_tool_call_output", "call_id": "p1", "output": answer}, "t1")
    root.call("p2", "apply_patch", {"input": "not a patch"}, "t1")
    root.output("p2", "apply_patch handler received invalid patch input", "t1")
    root.call("p3", "apply_patch", {"input": patch}, "t1")
    root.output("p3", "Success. Updated the following files:\nM a.py\n", "t1")
    root.task_complete("t1")
    root.write(tmp_path)
    steps = {row.record["id"]: row.record for row in mapped_cleanly(tmp_path, SID).steps}
    assert steps["p1"]["outcome"] == "failed"
    assert steps["p1"]["error"] == {"type": "tool_error", "message": answer}
    assert steps["p1"]["payload"]["tool_name"] == "apply_patch"
    assert steps["p2"]["outcome"] == "failed"
    assert steps["p2"]["error"]["message"] == "apply_patch handler received invalid patch input"
    assert steps["p3"]["outcome"] == "ok"


def test_a_declined_command_without_output_says_what_codex_answered(tmp_path: Path) -> None:
    # §5.4: error = the output "or the refusal text"; with an empty aggregated_output the
    # refusal is what Codex told the model, not a word Postrun makes up.
    root = RolloutWriter(SID)
    root.begin("t1", policy="on-request")
    root.user("u1", "MARK: delete", "t1")
    root.call("d1", "exec_command", {"cmd": "rm -rf build", "sandbox_permissions": "require_escalated"}, "t1")
    declined = {"type": "CommandExecution", "id": "d1", "command": ["/bin/bash", "-lc", "rm -rf build"]}
    root.item("t1", {**declined, "cwd": "file:///home/dev/work/app", "status": "declined", "aggregated_output": ""})
    root.output("d1", "exec command rejected by user", "t1")
    root.task_complete("t1")
    root.write(tmp_path)
    step = next(row.record for row in mapped_cleanly(tmp_path, SID).steps if row.record["id"] == "d1")
    assert (step["decision"], step["outcome"]) == ("rejected", "failed")
    assert step["error"] == {"type": "tool_error", "message": "exec command rejected by user"}
