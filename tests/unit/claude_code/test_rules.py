"""Single mapping rules on small hand-made transcripts (shapes from the real files)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from postrun.agents.claude_code import SessionLocation, list_sessions, map_session, read_from, read_session
from postrun.agents.claude_code.files import files_from_copies, session_fingerprint
from postrun.errors import NothingSaid, SourceError
from postrun.records import MappedSession
from tests.support.claude_lines import Transcript, meta
from tests.unit.claude_code.kit import CASES, FIXTURES, MAX_BYTES, assert_valid, map_location, same_mapping

CWD = "/home/dev/work/rules"
SID = "0ddba11e-0000-4000-8000-000000000001"


def _location(tmp_path: Path) -> SessionLocation:
    return SessionLocation(tmp_path / "projects", "-home-dev-work-rules", SID)


def _started() -> Transcript:
    t = Transcript(SID, CWD)
    t.enqueue("go")
    t.prompt("go", promptId="prompt-1", uuid="line-prompt")
    return t


def _map(tmp_path: Path, t: Transcript) -> MappedSession:
    location = _location(tmp_path)
    t.write(location.transcript)
    mapped, _ = map_location(location)
    assert_valid(mapped)
    return mapped


def _steps(mapped: MappedSession) -> dict[str, dict[str, Any]]:
    return {row.id: row.record for row in mapped.steps}


def test_a_hook_s_yes_is_automatic_and_a_person_s_is_accepted(tmp_path: Path) -> None:
    t = _started()
    for number, source in enumerate(["hook", "user", "config"]):
        t.call(f"msg_{number}", f"toolu_{source}", "Bash", {"command": "true"})
        permission = {"decision": "accept", "source": source}
        t.result(f"toolu_{source}", "", tool_use_result={"stdout": "", "stderr": ""}, permission=permission)
    steps = _steps(_map(tmp_path, t))
    assert [steps[f"toolu_{source}"]["decision"] for source in ("hook", "user", "config")] == [
        "auto",
        "accepted",
        "auto",
    ]


def test_read_texts_hold_what_each_read_returned_in_main_and_sub_agent_files_that_may_hold_a_secret(
    tmp_path: Path,
) -> None:
    t = _started()
    t.call("msg_1", "toolu_read", "Read", {"file_path": f"{CWD}/.env"})
    read = {"filePath": f"{CWD}/.env", "content": "TOKEN=abc\n", "numLines": 1, "startLine": 1, "totalLines": 1}
    t.result("toolu_read", "1\tTOKEN=abc\n", tool_use_result={"type": "text", "file": read})
    t.call("msg_2", "toolu_agent", "Agent", {"description": "Look", "prompt": "look"})
    t.call("msg_3", "toolu_missing", "Read", {"file_path": f"{CWD}/nope"})
    t.result("toolu_missing", "File does not exist.", is_error=True, tool_use_result="Error: File does not exist.")
    sub = Transcript(SID, CWD, agent_id="abc")
    sub.prompt("look")
    sub.call("msg_4", "toolu_sub_read", "Read", {"file_path": f"{CWD}/a.py"})
    sub.result("toolu_sub_read", "1\tpassword = 'hunter22'\n")
    sub.call("msg_5", "toolu_sub_plain", "Read", {"file_path": f"{CWD}/b.py"})
    sub.result("toolu_sub_plain", "1\tx = 1\n")  # no secret rule can match it: left out
    location = _location(tmp_path)
    sub.write(location.subagents / "agent-abc.jsonl")
    (location.subagents / "agent-abc.meta.json").write_text(json.dumps(meta("toolu_agent", "Look")))
    mapped = _map(tmp_path, t)
    assert mapped.read_texts == {"toolu_read": "TOKEN=abc\n", "agent-abc/toolu_sub_read": "1\tpassword = 'hunter22'\n"}


def test_a_line_that_is_not_json_yet_at_the_end_waits_and_junk_before_it_is_skipped(tmp_path: Path) -> None:
    t = _started()
    t.raw(b"not json at all\n")
    t.raw(b"\xff\xfe broken bytes\n")
    t.text("msg_1", "after the junk", uuid="line-after")
    t.raw(b'{"type":"assistant","message":{"id":"msg_2"')  # being written
    mapped = _map(tmp_path, t)
    assert [row.id for row in mapped.steps] == ["line-prompt", "line-after"]
    assert mapped.incomplete == (str(_location(tmp_path).transcript),)


def test_a_line_with_lone_surrogates_is_read_leniently(tmp_path: Path) -> None:
    t = _started()
    t.text("msg_1", "placeholder", uuid="line-odd")
    data = t.data().replace(b"placeholder", b"half \\ud800 a pair")
    location = _location(tmp_path)
    location.transcript.parent.mkdir(parents=True)
    location.transcript.write_bytes(data)
    mapped, _ = map_location(location)
    assert _steps(mapped)["line-odd"]["payload"]["text"] == "half \ufffd a pair"


def test_repeated_ids_stay_unique(tmp_path: Path) -> None:
    t = _started()
    t.text("msg_1", "once", uuid="line-same")
    t.text("msg_2", "twice", uuid="line-same")
    t.call("msg_3", "toolu_same", "Bash", {"command": "true"})
    t.call("msg_4", "toolu_same", "Bash", {"command": "false"})
    t.result("toolu_same", "Exit code 1", is_error=True, tool_use_result="Error: Exit code 1")
    steps = _steps(_map(tmp_path, t))
    assert list(steps) == ["line-prompt", "line-same", "line-same#2", "toolu_same", "toolu_same#2"]
    assert steps["toolu_same"]["outcome"] == "pending"  # the answer went to the latest call of that id
    assert steps["toolu_same#2"]["payload"]["exit_code"] == 1


def test_a_sub_agent_s_backgrounded_and_persisted_commands_are_references(tmp_path: Path) -> None:
    t = _started()
    t.call("msg_1", "toolu_agent", "Agent", {"description": "Work", "prompt": "work"})
    sub = Transcript(SID, CWD, agent_id="bg")
    sub.prompt("work")
    sub.call("msg_2", "toolu_slow", "Bash", {"command": "sleep 9", "timeout": 1000})
    sub.result(
        "toolu_slow",
        "Command did not complete within its 1s timeout and was moved to the background (ID: b1)."
        " Output is being written to: /tmp/claude-0/x/tasks/b1.output. You will be notified.",
    )
    sub.call("msg_3", "toolu_big", "Bash", {"command": "seq 1 99999"})
    sub.result(
        "toolu_big", "<persisted-output>\nOutput too large (600KB). Full output saved to: /p/tool-results/x.txt\n"
    )
    location = _location(tmp_path)
    sub.write(location.subagents / "agent-bg.jsonl")
    (location.subagents / "agent-bg.meta.json").write_text(json.dumps(meta("toolu_agent", "Work")))
    steps = _steps(_map(tmp_path, t))
    slow, big = steps["agent-bg/toolu_slow"], steps["agent-bg/toolu_big"]
    assert slow["content_status"] == "reference_only" and "exit_code" not in slow["payload"]
    assert slow["payload"]["output_ref"] == "/tmp/claude-0/x/tasks/b1.output"
    assert big["content_status"] == "reference_only" and big["payload"]["exit_code"] == 0
    assert big["payload"]["output_ref"] == "/p/tool-results/x.txt"


def test_sub_agents_that_name_each_other_are_both_kept(tmp_path: Path) -> None:
    t = _started()
    location = _location(tmp_path)
    for name, other in (("one", "two"), ("two", "one")):
        sub = Transcript(SID, CWD, agent_id=name)
        sub.prompt(f"{name} starts")
        sub.call(f"msg_{name}", f"toolu_{name}", "Agent", {"prompt": "x"})
        sub.write(location.subagents / f"agent-{name}.jsonl")
        (location.subagents / f"agent-{name}.meta.json").write_text(json.dumps(meta(f"toolu_{other}", name)))
    (location.subagents / "agent-bad.meta.json").write_text("{not json")
    mapped = _map(tmp_path, t)
    assert {actor["id"]: actor.get("parent_id") for actor in mapped.actors} == {
        "root": None,
        "agent-one": "root",
        "agent-two": "agent-one",
    }
    assert len(mapped.steps) == 5


def test_a_symlink_out_of_the_projects_folder_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    _started().write(outside)
    location = _location(tmp_path)
    location.transcript.parent.mkdir(parents=True)
    os.symlink(outside, location.transcript)
    with pytest.raises(SourceError, match="symlink to outside the projects folder"):
        read_session(location, max_bytes=MAX_BYTES)
    location.transcript.unlink()
    t = _started()
    t.call("msg_1", "toolu_agent", "Agent", {"prompt": "x"})
    location.subagents.mkdir(parents=True)
    os.symlink(outside, location.subagents / "agent-evil.jsonl")
    mapped = _map(tmp_path, t)
    assert [str(problem) for problem in mapped.unread] == [
        f"{location.subagents / 'agent-evil.jsonl'}: symlink to outside the projects folder"
    ]
    assert [actor["id"] for actor in mapped.actors] == ["root"]


def test_a_transcript_too_large_is_refused_naming_the_setting(tmp_path: Path) -> None:
    location = _location(tmp_path)
    _started().write(location.transcript)
    with pytest.raises(SourceError, match=r"larger than 0 MB \(max_file_mb\)"):
        read_session(location, max_bytes=100)


def test_steps_before_the_first_prompt_are_in_turn_zero(tmp_path: Path) -> None:
    t = Transcript(SID, CWD)
    t.notification("<task-notification>\n<task-id>x</task-id>\n</task-notification>", uuid="line-notice")
    t.prompt("now", promptId="prompt-1", uuid="line-prompt")
    mapped = _map(tmp_path, t)
    assert [(turn["id"], turn["step_ids"]) for turn in mapped.turns] == [
        ("turn:0", ["line-notice"]),
        ("turn:1", ["line-prompt"]),
    ]


def test_the_workspace_is_admitted_before_the_transcript_is_read(tmp_path: Path) -> None:
    location = _location(tmp_path)
    t = _started()
    t.text("msg_1", "x" * 200_000)  # far beyond the head that is looked at
    t.write(location.transcript)
    seen: list[str] = []

    class Refused(Exception):
        pass

    def refuse(workspace: str) -> None:
        seen.append(workspace)
        raise Refused

    with pytest.raises(Refused):
        read_session(location, max_bytes=MAX_BYTES, admit=refuse)
    files = read_session(location, max_bytes=MAX_BYTES, admit=seen.append)
    _, cache = map_session(files)
    with location.transcript.open("ab") as out:
        out.write(b"\n")
    read_session(location, max_bytes=MAX_BYTES, since=read_from(cache), admit=seen.append)
    assert seen == [CWD, CWD, CWD]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_vault_s_copies_map_as_the_files_do_and_fingerprints_name_every_file(case: Path) -> None:
    for location in list_sessions(case / "claude" / "projects").sessions:
        files = read_session(location, max_bytes=MAX_BYTES)
        fingerprints = session_fingerprint(location)
        assert fingerprints[0].path == str(location.transcript)
        assert {fingerprint.path for fingerprint in fingerprints} == {copy.fingerprint.path for copy in files.raw}
        assert {copy.name for copy in files.raw} == {
            os.path.relpath(copy.fingerprint.path, location.projects_root) for copy in files.raw
        }
        kept, _ = map_session(files_from_copies(location, files.raw))
        mapped, _ = map_session(files)
        assert same_mapping(kept, mapped)


def test_a_read_from_a_mark_still_hands_the_vault_every_file(tmp_path: Path) -> None:
    """The vault takes a file left out of a copy as removed: tool outputs and sidecars too."""
    for case in ("b_bash", "e_subagents"):
        shutil.copytree(FIXTURES / "claude-code-real" / case / "claude" / "projects", tmp_path / case)
        (location,) = list_sessions(tmp_path / case).sessions
        whole = read_session(location, max_bytes=MAX_BYTES)
        _, cache = map_session(whole)
        with location.transcript.open("ab") as out:
            out.write(b'{"type":"last-prompt","lastPrompt":"x"}\n')
        grown = read_session(location, max_bytes=MAX_BYTES, since=read_from(cache))
        assert grown.main.start > 0
        assert sorted(copy.name for copy in grown.raw) == sorted(copy.name for copy in whole.raw)
        assert len(whole.raw) > 1


def test_a_null_structured_patch_is_left_out_not_the_whole_session(tmp_path: Path) -> None:
    """claude-code.md §7: ``structured_patch`` as is, absent when there is none (v1.2: never null)."""
    t = _started()
    t.call("msg_1", "toolu_edit", "Edit", {"file_path": f"{CWD}/a.py", "old_string": "x", "new_string": "y"})
    t.result("toolu_edit", "ok", tool_use_result={"filePath": f"{CWD}/a.py", "structuredPatch": None})
    t.call("msg_2", "toolu_write", "Write", {"file_path": f"{CWD}/b.py", "content": "z"})
    t.result("toolu_write", "ok", tool_use_result={"type": "create", "filePath": f"{CWD}/b.py", "structuredPatch": []})
    steps = _steps(_map(tmp_path, t))
    assert "structured_patch" not in steps["toolu_edit"]["payload"]
    assert steps["toolu_edit"]["payload"]["new_string"] == "y"
    assert steps["toolu_write"]["payload"]["structured_patch"] == []  # an empty patch is a fact: kept


def test_a_sub_agent_s_command_that_succeeded_printing_exit_code_exited_zero(tmp_path: Path) -> None:
    """claude-code.md §7: no ``toolUseResult`` (sub-agent files) and not an error → exit code 0,
    stdout the result's text; "Exit code N" is read only from a failed call."""
    t = _started()
    t.call("msg_1", "toolu_agent", "Agent", {"description": "Work", "prompt": "work"})
    sub = Transcript(SID, CWD, agent_id="echo")
    sub.prompt("work")
    sub.call("msg_2", "toolu_echo", "Bash", {"command": "echo 'Exit code 7'; echo done"})
    sub.result("toolu_echo", "Exit code 7\ndone", is_error=False)
    sub.call("msg_3", "toolu_fail", "Bash", {"command": "echo out; exit 2"})
    sub.result("toolu_fail", "Exit code 2\nout", is_error=True)
    location = _location(tmp_path)
    sub.write(location.subagents / "agent-echo.jsonl")
    (location.subagents / "agent-echo.meta.json").write_text(json.dumps(meta("toolu_agent", "Work")))
    steps = _steps(_map(tmp_path, t))
    echo, fail = steps["agent-echo/toolu_echo"], steps["agent-echo/toolu_fail"]
    assert (echo["outcome"], echo["payload"]["exit_code"], echo["payload"]["stdout"]) == ("ok", 0, "Exit code 7\ndone")
    assert (fail["outcome"], fail["payload"]["exit_code"], fail["payload"]["stdout"]) == ("failed", 2, "out")


def test_numbers_beyond_the_store_s_integers_never_abort_the_session(tmp_path: Path) -> None:
    """An odd field is never an error (claude-code.md §2, §3): an exit code, a read's range or a
    token count too large to store is left out (capped for the sums), and the session is stored."""
    huge = 2**64 - 1  # still a JSON integer to the parser; past the store's 64-bit signed range
    t = _started()
    t.call("msg_1", "toolu_exit", "Bash", {"command": "x"}, usage=(huge, 1))
    t.result("toolu_exit", f"Exit code {huge}\nboom", is_error=True, tool_use_result=f"Error: Exit code {huge}\nboom")
    t.call("msg_2", "toolu_limit", "Read", {"file_path": f"{CWD}/a", "offset": huge, "limit": 5}, usage=(huge, 1))
    t.result("toolu_limit", "x", tool_use_result={"type": "text", "file": {}})
    t.call("msg_3", "toolu_offset", "Read", {"file_path": f"{CWD}/a", "offset": 2})
    t.result("toolu_offset", "x", tool_use_result={"type": "text", "file": {"startLine": 2**63 - 1, "numLines": 9}})
    t.text("msg_4", "big", usage=(2**63 - 1, 0))
    t.text("msg_5", "bigger", usage=(2**63 - 1, 0))
    mapped = _map(tmp_path, t)
    steps = _steps(mapped)
    assert "exit_code" not in steps["toolu_exit"]["payload"] and steps["toolu_exit"]["outcome"] == "failed"
    assert "range" not in steps["toolu_limit"]["payload"] and "range" not in steps["toolu_offset"]["payload"]
    tokens = mapped.session["metrics"]["tokens"]
    assert tokens["output"] == 1 + 1 + 50
    assert tokens["input"] == 2**63 - 1  # the two counts past it are 0; the sum is capped where the store's end


def test_a_session_killed_before_its_first_reply_has_metrics_of_nothing(tmp_path: Path) -> None:
    # claude-code.md §4: api_requests counts the assistant lines' ids, cost_usd is 0 when no
    # cost-state was written. Before, a session with neither had no metrics at all.
    mapped = _map(tmp_path, _started())
    assert mapped.session["metrics"] == {
        "cost_usd": 0.0,
        "api_requests": 0,
        "tokens": {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0},
    }


def test_a_transcript_of_summaries_only_is_nothing_to_record_until_a_session_line_comes(tmp_path: Path) -> None:
    # Older Claude Code wrote `summary` lines (no sessionId) of other sessions, alone in a file
    # or before a session's own lines: no turn, no step, so no session yet.
    location = _location(tmp_path)
    summary = {"type": "summary", "summary": "Fix the login bug", "leafUuid": "0b1c2d3e-0000-4000-8000-000000000001"}
    location.transcript.parent.mkdir(parents=True)
    location.transcript.write_text(json.dumps(summary) + "\n")
    with pytest.raises(NothingSaid, match="not recorded: no line of a session"):
        map_location(location)
    t = _started()
    location.transcript.write_bytes(location.transcript.read_bytes() + t.data())
    mapped, _ = map_location(location)
    assert [row.record["payload"]["role"] for row in mapped.steps] == ["user"]


def test_a_sub_agent_s_lines_in_the_main_transcript_open_no_turn(tmp_path: Path) -> None:
    """Older Claude Code wrote a Task's sub-agent into the main transcript (``isSidechain``,
    its chain starting again at the task's prompt). That prompt opened a turn as the person's,
    and the main agent's answer after the task went into it."""
    t = _started()
    t.call("msg_1", "toolu_task", "Task", {"description": "Search", "prompt": "Look for config files"})
    resume_at = t.parent
    t.parent = None
    t.prompt("Look for config files", uuid="line-side-prompt", isSidechain=True)
    t.text("msg_s1", "Found a.cfg", uuid="line-side-answer", isSidechain=True)
    t.parent = resume_at
    t.result("toolu_task", [{"type": "text", "text": "Found a.cfg"}], tool_use_result={"content": []})
    t.text("msg_2", "The config is a.cfg", uuid="line-answer")
    mapped = _map(tmp_path, t)
    assert [(turn["id"], turn["step_ids"]) for turn in mapped.turns] == [
        ("turn:1", ["line-prompt", "toolu_task", "line-side-prompt", "line-side-answer", "line-answer"])
    ]
    assert _steps(mapped)["line-side-prompt"]["payload"] == {"role": "system", "text": "Look for config files"}
