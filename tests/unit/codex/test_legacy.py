"""A rollout from before items, as older Codex CLIs wrote it (codex.md §5.1: the history is read
as steps; README: "its user and assistant messages, reasoning summaries and calls are read from it")."""

from __future__ import annotations

from pathlib import Path

import pytest

from postrun.agents.codex import SessionLocation, map_session, rollout_at
from postrun.agents.codex.calls import call_parts
from postrun.agents.codex.history import history_parts
from postrun.agents.codex.lines import rollout_lines
from postrun.agents.codex.reading import read_session
from tests.support.codex_legacy import (
    AGENTS_MD,
    PATCH,
    LegacyRollout,
    exec_json,
    instructions_then_prompt,
    pre_envelope_rollout,
)
from tests.support.codex_rollouts import T0, iso
from tests.unit.codex.kit import MAX_BYTES, mapped_cleanly, remap

SID = "0199b000-1111-7222-8333-4444555566a1"
SKILL = "<skill>\n<name>tdd</name>\n<path>/home/dev/.codex/skills/tdd/SKILL.md</path>\nWrite the test first.\n</skill>"
USER_SHELL = "<user_shell_command>\n<command>\nls\n</command>\n<result>\nExit code: 0\nOutput:\na\n</result>\n"


def _user(*texts: str) -> dict[str, object]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text} for text in texts]}


@pytest.mark.parametrize("texts", [(AGENTS_MD,), (SKILL,), (USER_SHELL,), ("<recommended>\nx", AGENTS_MD)])
def test_text_codex_injected_is_no_prompt(texts: tuple[str, ...]) -> None:
    # Codex's own list of contextual user fragments, which it never makes a UserMessage: the
    # project instructions under their later heading, a skill, a command the user ran with `!`,
    # also when such a fragment is one part of a message.
    found = history_parts(_user(*texts))
    assert found is not None
    parts, prompt = found
    assert (parts.payload["role"], prompt) == ("system", False)


def test_a_prompt_that_mentions_agents_md_is_a_prompt() -> None:
    found = history_parts(_user("Update the # AGENTS.md instructions for me"))
    assert found is not None
    assert (found[0].payload["role"], found[1]) == ("user", True)


def test_the_project_instructions_are_no_turn_and_no_title(tmp_path: Path) -> None:
    instructions_then_prompt(SID).write(tmp_path)
    mapped = mapped_cleanly(tmp_path, SID)
    assert [(turn["index"], turn["prompt_id"]) for turn in mapped.turns if turn["index"]] == [(1, "line-4")]
    roles = [(row.record["id"], row.record["payload"]["role"]) for row in mapped.steps]
    assert roles == [("line-1", "system"), ("line-2", "system"), ("line-4", "user"), ("line-5", "assistant")]


@pytest.mark.parametrize(
    ("output", "outcome", "message"),
    [
        (exec_json("apply_patch: context mismatch in a.py", 1), "failed", "apply_patch: context mismatch in a.py"),
        ("Exit code: 1\nWall time: 0 seconds\nOutput:\nno such file: a.py\n", "failed", "no such file: a.py\n"),
        (exec_json("Success. Updated the following files:\nM a.py\n", 0), "ok", None),
        ("Success. Updated the following files:\nM a.py\n", "ok", None),
    ],
)
def test_a_patch_answered_as_a_process_fails_on_its_exit_code(output: str, outcome: str, message: str | None) -> None:
    # An older Codex ran apply_patch as a process and answered as for a shell call: a patch
    # whose process exited 1 did not land (§5.4: failed when the exit code is not 0).
    parts = call_parts("apply_patch", PATCH, output, True, "/home/dev/work/app", True)
    assert parts.outcome == outcome
    assert parts.error == (None if message is None else {"type": "tool_error", "message": message})


def test_a_tool_that_is_no_patch_keeps_its_answer_ok() -> None:
    parts = call_parts("write_stdin", {"session_id": 1}, exec_json("done", 1), True, None, True)
    assert parts.outcome == "ok"


def test_a_patch_that_did_not_apply_is_failed_in_a_legacy_rollout(tmp_path: Path) -> None:
    root = LegacyRollout(SID)
    root.turn_context()
    root.user("MARK: patch a.py")
    root.patch("p1", PATCH, 1, "apply_patch: context mismatch in a.py")
    root.patch("p2", PATCH, 0, "Success. Updated the following files:\nM a.py\n")
    root.write(tmp_path)
    steps = {row.record["id"]: row.record for row in mapped_cleanly(tmp_path, SID).steps}
    assert (steps["p1"]["outcome"], steps["p1"]["error"]["message"]) == (
        "failed",
        "apply_patch: context mismatch in a.py",
    )
    assert steps["p2"]["outcome"] == "ok"


def test_a_call_left_without_a_result_fails_once_the_next_prompt_comes(tmp_path: Path) -> None:
    # Such a Codex kept no task_complete: the next prompt ends the turn, so a call its process
    # died in (no result) is failed then, not pending forever (§5.3); read live, as a fresh read.
    root = LegacyRollout(SID)
    root.turn_context()
    root.user("MARK: run the tests")
    root.shell("c1", "sleep 600", None, "")
    path = root.write(tmp_path)
    rollout = rollout_at(path)
    assert rollout is not None
    location = SessionLocation(SID, rollout, ())
    early, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    assert {row.id: row.record["outcome"] for row in early.steps}["c1"] == "pending"
    assert "ended_at" not in early.session
    root.turn_context()
    root.user("MARK: again")
    root.shell("c2", "ls", 0, "a\n")
    root.add("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    root.write(tmp_path)
    files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
    later, _ = remap(files, read_session(location, max_bytes=MAX_BYTES), cache)
    steps = {row.id: row.record for row in later.steps}
    assert (steps["c1"]["outcome"], steps["c1"]["error"]["message"]) == ("failed", "no result recorded; turn ended")
    assert steps["c2"]["outcome"] == "ok"
    assert later.session["ended_at"] == root.lines[-1]["timestamp"]  # every turn is over


CUT = "Total output lines: 35000\n\n1\n2\n[... omitted 34996 of 35000 lines ...]\n\n34999\n35000\n"


@pytest.mark.parametrize(
    ("output", "status"),
    [
        (exec_json(CUT, 0), "reference_only"),
        (
            "Exit code: 0\nWall time: 0.2 seconds\nTotal output lines: 9\nOutput:\n1\n…9 tokens truncated…\n",
            "reference_only",
        ),
        (
            "Process exited with code 0\nOutput:\nWarning: truncated output (original token count: 9)\n1",
            "reference_only",
        ),
        (exec_json("a\nb\n", 0), "inline"),
        ("Exit code: 0\nWall time: 0.2 seconds\nOutput:\na\nTotal output lines: 3\n", "inline"),
    ],
)
def test_an_output_codex_cut_is_reference_only(output: str, status: str) -> None:
    # Codex says it cut the output before the model saw it ("Total output lines: N" first, in
    # older Codexes): what is kept is partial and the rest is nowhere on disk (schema:
    # reference_only, "a command may keep the partial stdout").
    parts = call_parts("shell", {"command": ["bash", "-lc", "seq 1 35000"]}, output, True, None, True)
    assert (parts.type, parts.content_status) == ("command", status)


def test_the_lines_of_a_rollout_from_before_the_envelope_are_its_records() -> None:
    # Codex of mid 2025: a bare header, {"record_type": "state"} markers, bare history items.
    data = (
        b'{"id": "t-1", "timestamp": "2025-08-20T13:20:47.060Z", "instructions": null}\n'
        b'{"record_type": "state"}\n'
        b'{"type": "message", "role": "user", "content": []}\n'
        b'{"type": "function_call_output", "call_id": "c1", "output": "x"}\n'
        b'{"type": "sneeze", "payload": 3}\n'
    )
    parsed = rollout_lines(data, 0, 0)
    assert [(line.number, line.type) for line in parsed.lines] == [
        (0, "session_meta"),
        (2, "response_item"),
        (3, "response_item"),
    ]
    assert parsed.lines[0].timestamp == "2025-08-20T13:20:47.060Z"
    assert parsed.lines[2].payload == {"type": "function_call_output", "call_id": "c1", "output": "x"}
    # A bare header is a header on the first line only.
    assert rollout_lines(b'{"id": "t-1"}\n', 0, 1).lines == ()


def test_a_rollout_from_before_the_envelope_is_a_session(tmp_path: Path) -> None:
    pre_envelope_rollout(tmp_path, SID)
    mapped = mapped_cleanly(tmp_path, SID)
    assert mapped.session["started_at"] == iso(T0)
    steps = [(row.id, row.record["type"], row.record["turn_id"]) for row in mapped.steps]
    assert steps == [
        ("line-2", "message", "turn:0"),
        ("line-3", "message", "line-3"),
        ("rs_1", "message", "line-3"),
        ("c1", "command", "line-3"),
        ("msg_1", "message", "line-3"),
    ]
    command = next(row.record for row in mapped.steps if row.id == "c1")
    assert command["payload"] == {"command": "ls", "exit_code": 0, "stdout": "README.md\n"}
