"""Tool calls as steps: every tool row, input shape and outcome rule of the Cline mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.cline.kit import (
    ALL_ASKED,
    ALL_AUTO,
    T0,
    answer,
    call,
    item,
    mapped_session,
    message,
    one_call,
    prompt,
    steps_by_id,
)

CWD = "/home/dev/app"


def steps(mapped: Any) -> list[dict[str, Any]]:
    return [row.record for row in mapped.steps if not row.id.startswith(("u1#", "a1#"))]


def only(mapped: Any) -> dict[str, Any]:
    found = steps(mapped)
    assert len(found) == 1, [step["id"] for step in found]
    return found[0]


# --- run_commands -------------------------------------------------------------------


def test_command_items_with_exit_codes_and_stderr() -> None:
    results = [
        item("ok", "out\n[stderr]\nwarn"),
        item(
            "fails",
            "[Command exited with code 2]\nsome out\n[stderr]\nboom",
            success=False,
            error="Command exited with code 2",
        ),
        item(
            "fails-at-end", "partial\n[Command exited with code 3]", success=False, error="Command exited with code 3"
        ),
        item("empty", ""),
        item("only stderr", "\n[stderr]\nnoise"),
    ]
    mapped = one_call("run_commands", {"commands": [result["query"] for result in results]}, results)
    found = steps(mapped)
    assert [step["id"] for step in found] == [f"c1#{i}" for i in range(5)]
    assert [step["payload"] for step in found] == [
        {"command": "ok", "cwd": CWD, "stdout": "out", "stderr": "warn"},
        {"command": "fails", "cwd": CWD, "stdout": "some out", "stderr": "boom", "exit_code": 2},
        {"command": "fails-at-end", "cwd": CWD, "stdout": "partial", "exit_code": 3},
        {"command": "empty", "cwd": CWD, "stdout": ""},
        {"command": "only stderr", "cwd": CWD, "stdout": "", "stderr": "noise"},
    ]
    assert [step["outcome"] for step in found] == ["ok", "failed", "failed", "ok", "ok"]
    assert found[1]["error"] == {"type": "cline_tool_error", "message": "Command exited with code 2"}
    assert all(step["content_status"] == "inline" for step in found)
    assert all(step["at"] == "2026-09-21T14:13:21.000Z" for step in found)


@pytest.mark.parametrize(
    ("tool_input", "commands"),
    [
        ({"commands": ["a", "b"]}, ["a", "b"]),
        ({"commands": '["a", "b"]'}, ["a", "b"]),
        ('{"commands": ["a", "b"]}', ["a", "b"]),
        ({"commands": "a"}, ["a"]),
        ({"command": "a"}, ["a"]),
        ({"cmd": "a"}, ["a"]),
        (["a", "b"], ["a", "b"]),
        ("a", ["a"]),
        ({"command": "git", "args": ["log", "-n", "1 2"]}, ["git log -n '1 2'"]),
        ({"commands": [{"command": "ls", "args": ["-la"]}, "pwd"]}, ["ls -la", "pwd"]),
    ],
)
def test_command_input_shapes(tool_input: Any, commands: list[str]) -> None:
    mapped = one_call("run_commands", tool_input, [item(command, "x") for command in commands])
    assert [step["payload"]["command"] for step in steps(mapped)] == commands


def test_legacy_execute_command_is_a_command() -> None:
    step = only(one_call("execute_command", {"command": "npm test", "requires_approval": False}, "Command output: ok"))
    assert step["type"] == "command"
    assert step["payload"] == {"command": "npm test", "cwd": CWD, "stdout": "Command output: ok"}
    assert step["id"] == "c1#0"


def test_a_migrated_result_kept_as_content_blocks_is_its_text() -> None:
    blocks = [{"type": "text", "text": "Command executed.\nOutput:\nall passed"}, {"type": "image", "source": {}}]
    for content in (json.dumps(blocks), blocks):
        step = only(one_call("execute_command", {"command": "npm test"}, content))
        assert step["payload"] == {
            "command": "npm test",
            "cwd": CWD,
            "stdout": "Command executed.\nOutput:\nall passed",
        }
        assert (step["outcome"], step["content_status"]) == ("ok", "inline")


def test_plain_text_results_stay_text_even_when_they_look_like_json() -> None:
    step = only(one_call("execute_command", {"command": "echo [1, 2]"}, "[1, 2]"))
    assert step["payload"] == {"command": "echo [1, 2]", "cwd": CWD, "stdout": "[1, 2]"}
    other = only(one_call("ask_question", {"question": "?"}, '["a", "b"]'))
    assert other["payload"]["raw"]["result"] == '["a", "b"]'


def test_a_successful_command_printing_an_exit_marker_keeps_it_as_output() -> None:
    # The model reads a detached command's log back with cat: the log ends with Cline's marker,
    # but cat succeeded (success: true); its exit code is not the logged command's.
    log = "listening on :8080\n[Command exited with code 143]\n"
    cat = "cat /tmp/cline-command-aB12cD/output.log"
    step = only(one_call("run_commands", {"commands": [cat]}, [item(cat, log)]))
    assert step["payload"] == {"command": cat, "cwd": CWD, "stdout": log}
    assert (step["outcome"], step["content_status"]) == ("ok", "inline")


def test_command_failed_with_empty_result_kept_no_output() -> None:
    error = "Command failed: Command timed out after 30000ms"
    step = only(
        one_call("run_commands", {"commands": ["sleep 60"]}, [item("sleep 60", "", success=False, error=error)])
    )
    assert step["payload"] == {"command": "sleep 60", "cwd": CWD}
    assert (step["content_status"], step["outcome"]) == ("reference_only", "failed")
    assert step["error"] == {"type": "cline_tool_error", "message": error}
    assert "output_ref" not in step["payload"]


@pytest.mark.parametrize(
    ("result", "ref", "stdout"),
    [
        (
            "[Command is still running. Output will continue in /tmp/c-1/output.log]\nready",
            "/tmp/c-1/output.log",
            "ready",
        ),
        ("[Command is still running. Output will continue in /tmp/c-1/output.log]", "/tmp/c-1/output.log", None),
        (
            "The user chose to proceed while the command is starting or still running in their terminal. "
            "This is partial output; further output is being redirected to this file, which you can read to "
            "check progress: /tmp/cline/proceed-while-running-1-a.log\nOutput so far:\nwatching",
            "/tmp/cline/proceed-while-running-1-a.log",
            "watching",
        ),
        (
            "The command was still starting or running after 300 seconds, so Cline automatically proceeded. "
            "This is partial output; further output is being redirected to this file, which you can read to "
            "check progress: /tmp/cline/p-2.log\nNo output so far.",
            "/tmp/cline/p-2.log",
            None,
        ),
    ],
)
def test_proceed_while_running(result: str, ref: str, stdout: str | None) -> None:
    step = only(one_call("run_commands", {"commands": ["npm run dev"]}, [item("npm run dev", result)]))
    expected: dict[str, Any] = {"command": "npm run dev", "cwd": CWD, "output_ref": ref}
    if stdout is not None:
        expected["stdout"] = stdout
    assert step["payload"] == expected
    assert (step["content_status"], step["outcome"]) == ("reference_only", "ok")


def test_heredoc_joined_by_cline_makes_one_step_per_result() -> None:
    commands = ["cat > f <<'EOF'", "line", "EOF", "ls"]
    results = [item("cat > f <<'EOF'\nline\nEOF", ""), item("ls", "f")]
    found = steps(one_call("run_commands", {"commands": commands}, results))
    assert [(step["id"], step["payload"]["command"]) for step in found] == [
        ("c1#0", "cat > f <<'EOF'\nline\nEOF"),
        ("c1#1", "ls"),
    ]


def cut_query(command: str) -> str:
    """How Cline shows a command longer than 200 characters in a result's query."""
    more = len(command) - 200
    return f"{command[:200]} ... [command truncated: {more} more chars; full command is in the tool call input]"


def test_long_commands_come_from_the_input_not_the_cut_query() -> None:
    long = "echo " + "x" * 300
    found = steps(one_call("run_commands", {"commands": [long]}, [item(cut_query(long), "x" * 300)]))
    assert found[0]["payload"]["command"] == long
    # Also when Cline joined elements: the joined input is matched by the cut query.
    joined = [long, "done"]
    cut_joined = cut_query(long + "\ndone")
    found = steps(one_call("run_commands", {"commands": [*joined, "ls"]}, [item(cut_joined, ""), item("ls", "")]))
    assert [step["payload"]["command"] for step in found] == [long + "\ndone", "ls"]


# --- read_files ----------------------------------------------------------------------


def test_read_items_and_ranges() -> None:
    files = [
        {"path": "/a.py"},
        {"path": "/b.py", "start_line": 3, "end_line": 9},
        {"path": "/c.py", "start_line": 3},
        {"path": "/d.py", "start_line": True, "end_line": 2},
        {"file_path": "/e.py"},
        "/f.py",
    ]
    results = [item("/a.py", "1 | a"), item("/b.py:3-9", "3 | b"), item("/c.py:3-EOF", ""), item("/d.py", "")]
    results += [item("/e.py", ""), item("/f.py", "")]
    found = steps(one_call("read_files", {"files": files}, results))
    assert [step["type"] for step in found] == ["read"] * 6
    assert [step["payload"] for step in found] == [
        {"path": "/a.py"},
        {"path": "/b.py", "range": [3, 9]},
        {"path": "/c.py"},
        {"path": "/d.py"},
        {"path": "/e.py"},
        {"path": "/f.py"},
    ]


def test_what_a_read_returned_is_handed_to_the_flags_beside_its_step() -> None:
    files = [{"path": "/app/.env"}, {"path": "/app/b.py", "start_line": 3, "end_line": 9}, {"path": "/app/c.py"}]
    results = [item("/app/.env", "DB_PASS=x"), item("/app/b.py:3-9", "3 | b"), item("/app/c.py", "", success=False)]
    mapped = one_call("read_files", {"files": files}, results)
    # A text no secret rule can match (`3 | b`) is left out: its flags are the same without it.
    assert mapped.read_texts == {"c1#0": "DB_PASS=x"}
    assert all("DB_PASS" not in row.blob.decode() for row in mapped.steps)  # never in a record
    assert one_call("read_files", {"files": files}, answered=False).read_texts == {}  # pending: nothing read yet
    assert one_call("read_files", "/app/.env", "api_key: x").read_texts == {"c1#0": "api_key: x"}


@pytest.mark.parametrize(
    "tool_input",
    [{"files": "/a.py"}, {"file_paths": ["/a.py"]}, {"paths": "/a.py"}, {"path": "/a.py"}, "/a.py", ["/a.py"]],
)
def test_read_input_shapes(tool_input: Any) -> None:
    assert only(one_call("read_files", tool_input, [item("/a.py", "")]))["payload"] == {"path": "/a.py"}


def test_fewer_read_results_are_matched_by_query() -> None:
    files = [{"path": "/a.py"}, {"start_line": 1, "end_line": 2}, {"path": "/b.py", "start_line": 1, "end_line": 2}]
    results = [item("/a.py", "a"), item("/b.py:1-2", "b")]
    found = steps(one_call("read_files", {"files": files}, results))
    assert [(step["id"], step["payload"]) for step in found] == [
        ("c1#0", {"path": "/a.py"}),
        ("c1#1", {"path": "/b.py", "range": [1, 2]}),
    ]


def test_read_failure_and_legacy_read_file() -> None:
    step = only(
        one_call("read_files", {"files": ["/x"]}, [item("/x", "", success=False, error="Error reading file: ENOENT")])
    )
    assert (step["outcome"], step["error"]["message"], step["decision"]) == (
        "failed",
        "Error reading file: ENOENT",
        "auto",
    )
    legacy = only(one_call("read_file", {"path": "/y.py"}, "1 | y"))
    assert (legacy["type"], legacy["payload"], legacy["outcome"]) == ("read", {"path": "/y.py"}, "ok")


def test_read_without_any_path_degrades_to_other() -> None:
    step = only(one_call("read_files", {"files": [{"start_line": 1}]}, [{"result": "?", "success": True}]))
    assert step["type"] == "other"
    assert step["payload"] == {
        "tool_name": "read_files",
        "raw": {"input": {"start_line": 1}, "result": {"result": "?", "success": True}},
    }


# --- edits ---------------------------------------------------------------------------


def editor_result(path: str, text: str = "Edited") -> str:
    return json.dumps({"query": f"edit:{path}", "result": text, "success": True})


@pytest.mark.parametrize(
    ("tool_input", "payload"),
    [
        (
            {"path": "/a", "old_text": "x = 1", "new_text": "x = 2"},
            {"path": "/a", "old_string": "x = 1", "new_string": "x = 2", "is_full_write": False},
        ),
        ({"path": "/a", "new_text": "new file\n"}, {"path": "/a", "new_string": "new file\n", "is_full_write": True}),
        (
            {"path": "/a", "new_text": "line\n", "insert_line": 4},
            {"path": "/a", "new_string": "line\n", "is_full_write": False},
        ),
        (
            {"path": "/a", "old_str": "p", "new_str": "q"},
            {"path": "/a", "old_string": "p", "new_string": "q", "is_full_write": False},
        ),
        ('{"path": "/a", "new_text": "t"}', {"path": "/a", "new_string": "t", "is_full_write": True}),
    ],
)
def test_editor(tool_input: Any, payload: dict[str, Any]) -> None:
    step = only(one_call("editor", tool_input, editor_result("/a")))
    assert (step["type"], step["id"], step["outcome"]) == ("edit", "c1#0", "ok")
    assert step["payload"] == payload
    assert "structured_patch" not in step["payload"]


def test_editor_failure_and_editor_without_path() -> None:
    failed = json.dumps({"query": "edit:/a", "result": "", "success": False, "error": "No replacement performed"})
    step = only(one_call("editor", {"path": "/a", "old_text": "x", "new_text": "y"}, failed))
    assert (step["outcome"], step["error"]) == (
        "failed",
        {"type": "cline_tool_error", "message": "No replacement performed"},
    )
    odd = only(one_call("editor", {"new_text": "y"}, editor_result("?")))
    assert odd["type"] == "other"
    assert odd["payload"] == {
        "tool_name": "editor",
        "raw": {"input": {"new_text": "y"}, "result": json.loads(editor_result("?"))},
    }


def test_legacy_edit_tools() -> None:
    write = only(one_call("write_to_file", {"path": "/w", "content": "all\n"}, "done"))
    assert write["payload"] == {"path": "/w", "new_string": "all\n", "is_full_write": True}
    diff = (
        "------- SEARCH\nold a\n=======\nnew a\n+++++++ REPLACE\n<<<<<<< SEARCH\nold b\n=======\nnew b\n>>>>>>> REPLACE"
    )
    replace = only(one_call("replace_in_file", {"path": "/r", "diff": diff}, "done"))
    assert replace["payload"] == {
        "path": "/r",
        "old_string": "old a\nold b",
        "new_string": "new a\nnew b",
        "is_full_write": False,
    }
    unparsed = only(one_call("replace_in_file", {"path": "/r", "diff": "???"}, "done"))
    assert unparsed["payload"] == {"path": "/r", "is_full_write": False}


PATCH = """*** Begin Patch
*** Add File: src/new.py
+def f():
+    return 1
*** Update File: src/old.py
@@ def g():
 context
-    return 1
+    return 2
*** Delete File: src/gone.py
*** End Patch"""


@pytest.mark.parametrize("tool_input", [{"input": PATCH}, PATCH], ids=["object", "bare string"])
def test_apply_patch_makes_one_edit_per_file(tool_input: Any) -> None:
    result = json.dumps({"query": "apply_patch", "result": "Successfully applied patch", "success": True})
    found = steps(one_call("apply_patch", tool_input, result, approvals=ALL_ASKED))
    assert [(step["id"], step["type"], step["decision"]) for step in found] == [
        ("c1#0", "edit", "accepted"),
        ("c1#1", "edit", "accepted"),
        ("c1#2", "edit", "accepted"),
    ]
    assert [step["payload"] for step in found] == [
        {"path": "src/new.py", "new_string": "def f():\n    return 1\n", "is_full_write": True},
        {"path": "src/old.py", "old_string": "    return 1\n", "new_string": "    return 2\n", "is_full_write": False},
        {"path": "src/gone.py", "is_full_write": False},
    ]


def test_unparseable_patch_is_one_other_step() -> None:
    step = only(
        one_call("apply_patch", {"input": "not a patch"}, '{"error": "apply_patch failed: bad"}', is_error=True)
    )
    assert (step["type"], step["payload"]["tool_name"], step["outcome"]) == ("other", "apply_patch", "failed")
    assert step["error"]["message"] == "apply_patch failed: bad"


# --- other tools ---------------------------------------------------------------------


def test_search_and_fetch_items_are_other_steps() -> None:
    results = [item("foo", "Found 1 results"), item("bar", "No results found")]
    found = steps(one_call("search_codebase", {"queries": ["foo", "bar"]}, results))
    assert [step["payload"] for step in found] == [
        {"tool_name": "search_codebase", "raw": {"input": "foo", "result": results[0]}},
        {"tool_name": "search_codebase", "raw": {"input": "bar", "result": results[1]}},
    ]
    request = {"url": "https://x", "prompt": "sum"}
    fetched = only(
        one_call("fetch_web_content", {"requests": [request]}, [item("https://x", "text")], approvals=ALL_ASKED)
    )
    assert fetched["payload"] == {
        "tool_name": "fetch_web_content",
        "raw": {"input": request, "result": item("https://x", "text")},
    }
    assert fetched["decision"] == "accepted"


def test_fewer_search_results_are_matched_by_query() -> None:
    found = steps(one_call("search_codebase", {"queries": ["a", "b"]}, [item("b", "x")]))
    assert [step["payload"]["raw"]["input"] for step in found] == ["b"]


@pytest.mark.parametrize(
    ("name", "decision"),
    [
        ("ask_question", "auto"),
        ("spawn_agent", "auto"),
        ("github__create_issue", "accepted"),
        ("list_files", "accepted"),
    ],
)
def test_other_tools_keep_input_and_decoded_result(name: str, decision: str) -> None:
    step = only(one_call(name, {"q": 1}, '{"text": "done", "iterations": 2}', approvals=ALL_ASKED))
    assert step["type"] == "other"
    assert step["payload"] == {
        "tool_name": name,
        "raw": {"input": {"q": 1}, "result": {"text": "done", "iterations": 2}},
    }
    assert (step["decision"], step["outcome"]) == (decision, "ok")


def test_pending_other_has_no_result() -> None:
    step = only(one_call("ask_question", {"question": "?"}, answered=False))
    assert step["payload"] == {"tool_name": "ask_question", "raw": {"input": {"question": "?"}}}
    assert (step["outcome"], step["content_status"]) == ("pending", "reference_only")


# --- outcomes and decisions -----------------------------------------------------------


def test_whole_call_error_applies_to_every_item() -> None:
    error = "Command not executed: `touch` can modify files, and file modifications are blocked in plan mode."
    found = steps(
        one_call("run_commands", {"commands": ["ls", "touch x"]}, json.dumps({"error": error}), is_error=True)
    )
    assert [step["payload"] for step in found] == [{"command": "ls", "cwd": CWD}, {"command": "touch x", "cwd": CWD}]
    for step in found:
        assert (step["decision"], step["outcome"]) == ("rejected", "failed")
        assert step["error"] == {"type": "cline_tool_error", "message": error}


def test_whole_call_error_without_items_is_one_other_step() -> None:
    error = "Tool call c1 emitted invalid JSON arguments"
    step = only(one_call("run_commands", {}, json.dumps({"error": error}), is_error=True))
    assert (step["type"], step["id"], step["outcome"], step["error"]["message"]) == ("other", "c1#0", "failed", error)


@pytest.mark.parametrize(
    "wording",
    [
        "User denied the tool execution",
        "The user denied this edit. The file was NOT modified.",
        "This tool call was rejected by the user and not executed",
        'Tool "editor" was not approved',
        'Tool "editor" was denied by user',  # a person's "no" at an older CLI's approval prompt
        'Tool "editor" requires approval in a TTY session',
        "Desktop tool approval IPC is not configured",
        'Tool "editor" is disabled by policy',
        "Edit not applied: file modifications are blocked in plan mode",
    ],
)
def test_refusals_are_rejected(wording: str) -> None:
    editor_input = {"path": "/a", "new_text": "x"}
    whole = only(one_call("editor", editor_input, json.dumps({"error": wording}), is_error=True))
    plain = only(one_call("editor", editor_input, wording, is_error=True))
    failed_item = json.dumps({"query": "edit:/a", "result": "", "success": False, "error": wording})
    in_item = only(one_call("editor", editor_input, failed_item))
    for step in (whole, plain, in_item):
        assert (step["type"], step["decision"], step["outcome"]) == ("edit", "rejected", "failed")
        assert step["error"] == {"type": "cline_tool_error", "message": wording}


def test_refusal_wording_in_successful_output_is_not_a_refusal() -> None:
    # Plain text without is_error is a success (an answer, an older tool's output), whatever it says.
    answer_text = only(one_call("ask_question", {"question": "Merged?"}, "No: it was not approved"))
    assert (answer_text["decision"], answer_text["outcome"]) == ("auto", "ok")
    step = only(
        one_call("run_commands", ["grep -r denied"], [item("grep -r denied", "log: User denied the tool execution")])
    )
    assert (step["decision"], step["outcome"]) == ("auto", "ok")
    failed = only(
        one_call(
            "run_commands",
            ["cat log"],
            [
                item(
                    "cat log",
                    "[Command exited with code 1]\nUser denied the tool execution",
                    success=False,
                    error="Command exited with code 1",
                )
            ],
        )
    )
    assert (failed["decision"], failed["outcome"]) == ("auto", "failed")


def test_a_tools_own_error_saying_not_approved_is_a_failure_not_a_refusal() -> None:
    # The contract's wording names the tool (`Tool "x" was not approved`); an MCP tool that
    # throws about something else not approved ran, with the user's consent, and failed.
    error = "Merge failed: pull request #12 was not approved by a reviewer"
    step = only(one_call("github__merge_pr", {"number": 12}, json.dumps({"error": error}), is_error=True))
    assert (step["decision"], step["outcome"], step["error"]["message"]) == ("auto", "failed", error)
    refused = only(
        one_call(
            "github__merge_pr",
            {"number": 12},
            '{"error": "Tool \\"github__merge_pr\\" was not approved"}',
            is_error=True,
        )
    )
    assert (refused["decision"], refused["outcome"]) == ("rejected", "failed")


@pytest.mark.parametrize(
    "error", ["AI_NoSuchToolError: Model tried to call unavailable tool 'magic'", "Unknown tool: magic"]
)
def test_unknown_tool_is_not_applicable(error: str) -> None:
    step = only(one_call("magic", {"x": 1}, json.dumps({"error": error}), is_error=True))
    assert (step["type"], step["decision"], step["outcome"]) == ("other", "n/a", "failed")
    assert step["error"]["message"] == error


@pytest.mark.parametrize("error", [None, ""])
def test_an_error_field_holding_nothing_is_no_error(error: str | None) -> None:
    step = only(one_call("srv__query", {"q": 1}, json.dumps({"result": "fine", "error": error})))
    assert (step["outcome"], step["decision"]) == ("ok", "auto")
    assert "error" not in step


def test_plain_failure_keeps_the_category_decision() -> None:
    step = only(
        one_call(
            "editor", {"path": "/a", "new_text": "x"}, "Editor input too large", is_error=True, approvals=ALL_ASKED
        )
    )
    assert (step["decision"], step["outcome"], step["error"]["message"]) == (
        "accepted",
        "failed",
        "Editor input too large",
    )


def test_failed_item_without_error_uses_the_result_text() -> None:
    step = only(one_call("fetch_web_content", [{"url": "u"}], [{"query": "u", "result": "HTTP 500", "success": False}]))
    assert step["error"] == {"type": "cline_tool_error", "message": "HTTP 500"}


def test_results_in_one_legacy_message_and_text_beside_them() -> None:
    mapped = mapped_session(
        [
            prompt("u1", "go"),
            message(
                "a1", "assistant", [call("c1", "read_file", {"path": "/a"}), call("c2", "read_file", {"path": "/b"})]
            ),
            message(
                "r1",
                "user",
                [
                    answer("c1", "a"),
                    answer("c2", "b", is_error=True),
                    {"type": "text", "text": "<feedback>more</feedback>"},
                ],
                ts=T0 + 5,
            ),
        ],
        approvals=ALL_AUTO,
    )
    found = steps_by_id(mapped)
    assert (found["c1#0"]["outcome"], found["c2#0"]["outcome"]) == ("ok", "failed")
    assert found["r1#2"]["payload"] == {"role": "user", "text": "<feedback>more</feedback>"}
    assert found["r1#2"]["turn_id"] == "turn:2"


def test_calls_in_several_messages_keep_their_ids() -> None:
    mapped = mapped_session(
        [
            prompt("u1", "go"),
            message("a1", "assistant", [call("c1", "skills", {})]),
            message("r1", "user", [answer("c1", "x")]),
            message("a2", "assistant", [call("c2", "skills", {})], ts=T0 + 7000),
        ]
    )
    found = steps_by_id(mapped)
    assert list(found) == ["u1#0", "c1#0", "c2#0"]
    assert found["c2#0"]["at"] == "2026-09-21T14:13:27.000Z"
