"""Decisions read from the calls (codex.md §5.4): Codex writes no approval event, so what a
step says about who allowed it comes from the turn's policy and what Codex answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import mapped_cleanly

SID = "01a2330d-0000-7000-8000-0000000000d1"


def _refused_under(sessions: Path, policy: str, refusal: str) -> dict[str, Any]:
    root = RolloutWriter(SID)
    root.begin("t1", policy=policy)
    root.user("u1", "MARK: write outside", "t1")
    root.call("c1", "exec_command", {"cmd": "touch /etc/x", "sandbox_permissions": "require_escalated"}, "t1")
    root.output("c1", refusal, "t1")
    root.task_complete("t1")
    root.write(sessions)
    return _steps(sessions)["c1"]


def _steps(sessions: Path) -> dict[str, dict[str, Any]]:
    return {row.record["id"]: row.record for row in mapped_cleanly(sessions, SID).steps}


def test_a_command_that_prints_codex_refusal_words_was_not_refused(tmp_path: Path) -> None:
    # §5.4: `rejected` is for "a result saying Codex refused it"; a grep over Codex's source
    # that finds its refusal text ran (exit 0) and is no refusal.
    root = RolloutWriter(SID)
    root.begin("t1")
    root.user("u1", "MARK: find where Codex refuses", "t1")
    found = 'core/src/exec.rs:88:    "approval policy is Never; reject command: escalation is not allowed"\n'
    root.command("c1", "grep -rn 'reject command' core/src", "t1", output=found)
    root.call("c2", "exec_command", {"cmd": "grep -rn Rejected core/src"}, "t1")
    root.exec_output(
        "c2", 0, 'core/src/x.rs:5: exec_command failed: CreateProcess { message: "Rejected(\\"no\\")" }\n', "t1"
    )
    root.call("c3", "lookup", {"word": "policy"}, "t1")
    root.output(
        "c3",
        [{"type": "input_text", "text": "doc: MCP tool call requires approval, but approval policy is never"}],
        "t1",
    )
    # Codex's own refusals still are: the whole result, or one text part of it.
    root.call("c4", "exec_command", {"cmd": "touch /etc/x", "sandbox_permissions": "require_escalated"}, "t1")
    root.output("c4", "approval policy is Never; reject command: the sandbox denied it", "t1")
    root.call("c5", "lookup", {"word": "secret"}, "t1")
    parts = [
        {"type": "input_text", "text": "Wall time: 0.0151 seconds\nOutput:"},
        {"type": "input_text", "text": "MCP tool call requires approval, but approval policy is never"},
    ]
    root.output("c5", parts, "t1")
    root.task_complete("t1")
    root.write(tmp_path)

    steps = _steps(tmp_path)

    for ran in ("c1", "c2", "c3"):
        assert (steps[ran]["decision"], steps[ran]["outcome"]) == ("auto", "ok"), ran
        assert "error" not in steps[ran]
    assert steps["c1"]["payload"]["stdout"] == found
    for refused in ("c4", "c5"):
        assert (steps[refused]["decision"], steps[refused]["outcome"]) == ("rejected", "failed"), refused


def test_an_escalation_refused_under_any_policy_is_rejected(tmp_path: Path) -> None:
    # Codex refuses an escalation under every policy but on-request, naming the policy it
    # had (`approval policy is {policy:?}; reject command — …`): each is Codex refusing it.
    for policy, name in (("never", "Never"), ("untrusted", "UnlessTrusted"), ("on-failure", "OnFailure")):
        refusal = f"approval policy is {name}; reject command — you cannot ask for escalated permissions"
        step = _refused_under(tmp_path / policy, policy, refusal)
        assert (step["decision"], step["outcome"]) == ("rejected", "failed"), policy
        assert step["error"] == {"type": "tool_error", "message": refusal}


def test_an_escalation_is_accepted_once_it_ran_never_while_it_waits(tmp_path: Path) -> None:
    # §5.4 / README: `accepted` when it asked to leave the sandbox under a policy that asks
    # "and ran"; a call still waiting for its review, or whose process was killed before an
    # answer, was approved by nobody.
    root = RolloutWriter(SID)
    root.begin("t1", policy="on-request")
    root.user("u1", "MARK: clean up outside", "t1")
    root.call("e1", "exec_command", {"cmd": "rm -rf /tmp/out", "sandbox_permissions": "require_escalated"}, "t1")
    root.write(tmp_path)
    waiting = _steps(tmp_path)["e1"]
    assert (waiting["decision"], waiting["outcome"]) == ("auto", "pending")

    root.exec_output("e1", 0, "", "t1")
    root.write(tmp_path)
    ran = _steps(tmp_path)["e1"]
    assert (ran["decision"], ran["outcome"]) == ("accepted", "ok")

    killed = RolloutWriter(SID)
    killed.begin("t1", policy="on-request")
    killed.user("u1", "MARK: clean up outside", "t1")
    killed.call("e1", "exec_command", {"cmd": "rm -rf /tmp/out", "sandbox_permissions": "require_escalated"}, "t1")
    killed.begin("t2", policy="on-request", first=False)  # a resume: the killed turn is over
    killed.user("u2", "MARK: go on", "t2")
    killed.write(tmp_path)
    never_answered = _steps(tmp_path)["e1"]
    assert (never_answered["decision"], never_answered["outcome"]) == ("auto", "failed")
