"""The hand-made Claude Code cases of ``tests/fixtures/claude-code/``: what the real cases lack.

    python -m tests.support.claude_cases      # writes every case's claude/projects/ again

Each case's ``expect.json`` is written by hand from the rules, never from Postrun's output;
``test_made_cases_are_as_built`` keeps the files equal to what this module builds.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.support.claude_lines import MISSING, Transcript, dumps, meta

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code"
BASH_OK = {"stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}


def _slug(cwd: str) -> str:
    return "".join(char if char.isalnum() else "-" for char in cwd)


def _sid(number: int) -> str:
    return f"c0ffee00-0000-4000-8000-{number:012d}"


def resume_plan_refused(projects: Path) -> None:
    """Two invocations (a resume), plan mode, refused calls, a tool not available, a person's yes."""
    cwd = "/home/dev/work/resume"
    t = Transcript(_sid(1), cwd, "2026-12-02T10:00:00.000Z")
    t.enqueue("List the repo and run the tests.")
    t.prompt("List the repo and run the tests.", promptId="prompt-r1", uuid="line-r-prompt-1")
    t.metadata(prompt="List the repo and run the tests.")
    t.text("msg_r1", "Looking around.", uuid="line-r-text-1")
    t.call("msg_r1", "toolu_r1_read", "Read", {"file_path": f"{cwd}/setup.cfg", "offset": 5})
    read = {
        "filePath": f"{cwd}/setup.cfg",
        "content": "[tool]\nx = 1\n",
        "numLines": 2,
        "startLine": 5,
        "totalLines": 6,
    }
    t.result("toolu_r1_read", "5\t[tool]\n6\tx = 1\n", tool_use_result={"type": "text", "file": read})
    t.metadata()
    t.call("msg_r2", "toolu_r2_bash", "Bash", {"command": "rm -rf build", "description": "Clean"})
    denied = "Permission to use Bash with command rm -rf build has been denied."
    t.result(
        "toolu_r2_bash",
        denied,
        is_error=True,
        tool_use_result=f"Error: {denied}",
        permission={"decision": "reject", "source": "config", "reasonCode": "unknown"},
        denial="user-rejected",
    )
    t.call("msg_r3", "toolu_r3_bash", "Bash", {"command": "pytest -q", "description": "Run the tests"})
    t.result(
        "toolu_r3_bash",
        "3 passed",
        is_error=False,
        tool_use_result={"stdout": "3 passed", **BASH_OK},
        permission={"decision": "accept", "source": "user", "reasonType": "prompt"},
    )
    t.text("msg_r4", "Tests pass.", uuid="line-r-text-4")
    t._message("last-prompt", lastPrompt="List the repo and run the tests.", leafUuid=t.parent)
    t.cost_state(0.01, 4000, 200)
    t.tick(300_000)  # resumed five minutes later: ``claude --resume``
    t.enqueue("Plan the refactor.")
    t.prompt("Plan the refactor.", mode="plan", promptId="prompt-r2", uuid="line-r-prompt-2")
    t.metadata(prompt="Plan the refactor.")
    t.call("msg_r5", "toolu_r5_edit", "Edit", {"file_path": f"{cwd}/app.py", "old_string": "a", "new_string": "b"})
    plan_denied = "Permission to use Edit has been denied because Claude Code is running in plan mode."
    t.result(
        "toolu_r5_edit",
        plan_denied,
        is_error=True,
        tool_use_result=f"Error: {plan_denied}",
        permission={"decision": "reject", "source": "config", "reasonCode": "mode:plan"},
        denial="user-rejected",
    )
    t.call("msg_r6", "toolu_r6_exit", "ExitPlanMode", {"plan": "Rename a to b."})
    missing = "No such tool available: ExitPlanMode. ExitPlanMode is disabled for this session."
    t.result(
        "toolu_r6_exit",
        f"<tool_use_error>Error: {missing}</tool_use_error>",
        is_error=True,
        tool_use_result=f"Error: {missing}",
        permission=MISSING,
    )
    t.text("msg_r7", "Plan: rename a to b.", uuid="line-r-text-7")
    t.cost_state(0.025, 7000, 350)
    t.write(projects / _slug(cwd) / f"{t.session_id}.jsonl")


def compact(projects: Path) -> None:
    """``/compact`` between two prompts: three invocations, the compaction's lines injected."""
    cwd = "/home/dev/work/compact"
    t = Transcript(_sid(2), cwd, "2026-12-02T11:00:00.000Z")
    t.enqueue("Read the config.")
    t.prompt("Read the config.", promptId="prompt-c1", uuid="line-c-prompt-1")
    t.metadata(prompt="Read the config.")
    t.call("msg_c1", "toolu_c1_read", "Read", {"file_path": f"{cwd}/config.toml", "offset": 1, "limit": 3})
    read = {"filePath": f"{cwd}/config.toml", "content": "a = 1\nb = 2\nc = 3\n", "numLines": 3, "startLine": 1}
    t.result("toolu_c1_read", "1\ta = 1\n2\tb = 2\n3\tc = 3\n", tool_use_result={"type": "text", "file": read})
    t.text("msg_c2", "Read it.", uuid="line-c-text-2")
    t.cost_state(0.01024, 2080, 100)
    t.tick(60_000)
    t.enqueue("/compact")
    t.compact_boundary()
    summary = (
        "This session is being continued from a previous conversation that ran out of context."
        " The summary below covers the earlier portion of the conversation.\n\nSummary: config.toml was read."
    )
    t.injected(summary, isCompactSummary=True, isVisibleInTranscriptOnly=True, uuid="line-c-summary")
    caveat = (
        "<local-command-caveat>Caveat: The messages below were generated by the user while running local"
        " commands. DO NOT respond to these messages or otherwise consider them in your response unless the"
        " user explicitly asks you to.</local-command-caveat>"
    )
    t.injected(caveat, isMeta=True, uuid="line-c-caveat")
    command = (
        "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n"
        "            <command-args></command-args>"
    )
    t.injected(command, uuid="line-c-command")
    t.injected("<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>", uuid="line-c-out")
    t.cost_state(0.0154, 3120, 150)
    t.tick(60_000)
    t.enqueue("Now add a key.")
    t.prompt("Now add a key.", promptId="prompt-c2", uuid="line-c-prompt-2")
    t.metadata(prompt="Now add a key.")
    edit = {"file_path": f"{cwd}/config.toml", "old_string": "c = 3", "new_string": "c = 3\nd = 4"}
    t.call("msg_c3", "toolu_c3_edit", "Edit", edit)
    patch = [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 2, "lines": [" c = 3", "+d = 4"]}]
    t.result(
        "toolu_c3_edit",
        f"The file {cwd}/config.toml has been updated successfully.",
        tool_use_result={"filePath": f"{cwd}/config.toml", "structuredPatch": patch, "userModified": False},
    )
    t.text("msg_c4", "Added d.", uuid="line-c-text-4")
    t.cost_state(0.02588, 5220, 250)
    t.write(projects / _slug(cwd) / f"{t.session_id}.jsonl")


def other_tools(projects: Path) -> None:
    """Tools without a type of their own, odd lines and blocks, an interrupted command."""
    cwd = "/home/dev/work/tools"
    t = Transcript(_sid(3), cwd, "2026-12-02T12:00:00.000Z")
    t.enqueue("Tidy the repo.")
    t.prompt("Tidy the repo.", promptId="prompt-g1", uuid="line-g-prompt")
    t.metadata(prompt="Tidy the repo.")
    two = [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]
    t.assistant("msg_g1", two, uuid="line-g-two-texts")
    t.call("msg_g1", "toolu_g_glob", "Glob", {"pattern": "**/*.py"})
    globbed = {"filenames": [f"{cwd}/a.py", f"{cwd}/b.py"], "durationMs": 3, "numFiles": 2, "truncated": False}
    t.result("toolu_g_glob", f"{cwd}/a.py\n{cwd}/b.py", tool_use_result=globbed)
    t.raw({"type": "future-kind", "sessionId": t.session_id, "timestamp": t.tick(), "payload": {"what": "new"}})
    t.raw(b'{"type":"user","message":{"role":"user","content":"torn long ago\n')
    t.raw(b"[1, 2, 3]\n")
    t.call("msg_g2", "toolu_g_grep", "Grep", {"pattern": "def ", "output_mode": "content"})
    grepped = {"mode": "content", "numFiles": 0, "filenames": [], "content": "a.py:1:def f():", "numLines": 1}
    t.result("toolu_g_grep", "a.py:1:def f():", tool_use_result=grepped)
    todos = [{"content": "Rename f", "status": "pending", "activeForm": "Renaming f"}]
    t.call("msg_g3", "toolu_g_todo", "TodoWrite", {"todos": todos})
    t.result(
        "toolu_g_todo", "Todos have been modified successfully.", tool_use_result={"oldTodos": [], "newTodos": todos}
    )
    t.call("msg_g4", "toolu_g_search", "ToolSearch", {"query": "select:NotebookEdit", "max_results": 1})
    found = {"matches": ["NotebookEdit"], "query": "select:NotebookEdit", "total_deferred_tools": 12}
    t.result("toolu_g_search", [{"type": "tool_reference", "tool_name": "NotebookEdit"}], tool_use_result=found)
    notebook = {"notebook_path": f"{cwd}/nb.ipynb", "new_source": "print(1)", "cell_id": "c1"}
    t.call("msg_g5", "toolu_g_notebook", "NotebookEdit", notebook)
    unread = "File has not been read yet. Read it first before writing to it."
    t.result(
        "toolu_g_notebook",
        f"<tool_use_error>{unread}</tool_use_error>",
        is_error=True,
        tool_use_result=f"Error: {unread}",
        permission=MISSING,
    )
    t.call("msg_g6", "toolu_g_fetch", "WebFetch", {"url": "http://example.com/", "prompt": "Summarize"})
    ssl = "error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER"
    t.result("toolu_g_fetch", ssl, is_error=True, tool_use_result=f"Error: {ssl}")
    edits = {"file_path": f"{cwd}/a.py", "edits": [{"old_string": "def f", "new_string": "def g"}]}
    t.call("msg_g7", "toolu_g_multi", "MultiEdit", edits)
    patch = [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-def f():", "+def g():"]}]
    t.result(
        "toolu_g_multi",
        f"Applied 1 edit to {cwd}/a.py",
        tool_use_result={"filePath": f"{cwd}/a.py", "edits": edits["edits"], "structuredPatch": patch},
    )
    t.call("msg_g8", "toolu_g_mcp", "mcp__github__list_issues", {"repo": "dev/tools"})
    t.result("toolu_g_mcp", [{"type": "text", "text": "[]"}], tool_use_result=[{"type": "text", "text": "[]"}])
    search = {"type": "server_tool_use", "id": "srvtoolu_g1", "name": "web_search", "input": {"query": "tidy"}}
    t.assistant("msg_g9", [search], uuid="line-g-server-tool")
    thought = [
        {"type": "thinking", "thinking": "Sleep first.", "signature": "EqMock=="},
        {"type": "text", "text": "Waiting."},
    ]
    t.assistant("msg_g9", thought, uuid="line-g-thinking-and-text")
    t.call("msg_g9", "toolu_g_sleep", "Bash", {"command": "sleep 100", "description": "Wait"})
    t.result(
        "toolu_g_sleep",
        "[Request interrupted by user for tool use]",
        is_error=True,
        tool_use_result={"stdout": "", **BASH_OK, "interrupted": True},
    )
    t.text("msg_g10", "Tidied.", uuid="line-g-final")
    t.cost_state(0.05, 10000, 500)
    t.write(projects / _slug(cwd) / f"{t.session_id}.jsonl")


def killed(projects: Path) -> None:
    """A run killed mid-call; another killed, then resumed twice; junk beside them."""
    cwd = "/home/dev/work/killed"
    slug = projects / _slug(cwd)
    t = Transcript(_sid(4), cwd, "2026-12-02T13:00:00.000Z")
    t.enqueue("Run the long job.")
    t.prompt("Run the long job.", promptId="prompt-k1", uuid="line-k-prompt")
    t.metadata(prompt="Run the long job.")
    t.text("msg_k1", "Starting.", uuid="line-k-text")
    t.call("msg_k1", "toolu_k1_bash", "Bash", {"command": "sleep 600", "description": "Long job"})
    t.write(slug / f"{t.session_id}.jsonl")
    t = Transcript(_sid(5), cwd, "2026-12-02T14:00:00.000Z")
    t.enqueue("Build it.")
    t.prompt("Build it.", promptId="prompt-k2", uuid="line-k2-prompt-1")
    t.metadata(prompt="Build it.")
    t.call("msg_k2", "toolu_k2_make", "Bash", {"command": "make", "description": "Build"})
    t.tick(120_000)  # killed; resumed two minutes later (no cost-state: not told apart)
    t.enqueue("Try again.")
    t.prompt("Try again.", promptId="prompt-k3", uuid="line-k2-prompt-2")
    t.metadata(prompt="Try again.")
    t.text("msg_k3", "Built.", uuid="line-k2-text-3")
    t.cost_state(0.01, 2000, 100)
    t.tick(60_000)
    t.enqueue("Status?")
    t.prompt("Status?", promptId="prompt-k4", uuid="line-k2-prompt-3")
    t.metadata(prompt="Status?")
    t.text("msg_k4", "All good.", uuid="line-k2-text-4")
    t.cost_state(0.02, 3000, 150)
    t.write(slug / f"{t.session_id}.jsonl")
    (slug / "memory").mkdir()
    (slug / "notes.txt").write_text("not a transcript\n")
    (slug / "bad name.jsonl").write_bytes(dumps({"type": "user"}))
    (projects / "stray.jsonl").write_text("{}\n")


def subagents_nested(projects: Path) -> None:
    """A sub-agent that starts one of its own, and one whose meta.json is missing."""
    cwd = "/home/dev/work/nested"
    sid = _sid(6)
    t = Transcript(sid, cwd, "2026-12-02T15:00:00.000Z")
    t.enqueue("Delegate the count.")
    t.prompt("Delegate the count.", promptId="prompt-n1", uuid="line-n-prompt-1")
    t.metadata(prompt="Delegate the count.")
    t.text("msg_n1", "Asking a helper.", uuid="line-n-text-1")
    outer_input = {
        "description": "Outer helper",
        "prompt": "OUTER: count the files",
        "subagent_type": "general-purpose",
    }
    t.call("msg_n1", "toolu_n_outer", "Agent", outer_input)
    outer = Transcript(sid, cwd, t.tick(), agent_id="aaaa1111")
    outer.prompt_id = "prompt-n1"
    outer.prompt("OUTER: count the files", promptId="prompt-n1", uuid="line-o-prompt")
    outer.metadata()
    inner_input = {"description": "Inner helper", "prompt": "INNER: run ls", "subagent_type": "general-purpose"}
    outer.call("msg_n2", "toolu_n_inner", "Agent", inner_input)
    inner = Transcript(sid, cwd, outer.tick(), agent_id="bbbb2222")
    inner.prompt("INNER: run ls", promptId="prompt-n1", uuid="line-i-prompt")
    inner.metadata()
    inner.call("msg_n3", "toolu_n_ls", "Bash", {"command": "ls | wc -l", "description": "Count"})
    inner.result("toolu_n_ls", "4", is_error=False)
    inner.text("msg_n4", "4 files.", uuid="line-i-text")
    outer.clock = inner.clock
    outer.result("toolu_n_inner", [{"type": "text", "text": "4 files."}])
    outer.text("msg_n5", "The inner helper counted 4.", uuid="line-o-text")
    t.clock = outer.clock
    status = {"status": "completed", "agentId": "aaaa1111", "content": [{"type": "text", "text": "4."}]}
    t.result("toolu_n_outer", [{"type": "text", "text": "The inner helper counted 4."}], tool_use_result=status)
    t.text("msg_n6", "There are 4 files.", uuid="line-n-text-6")
    t.enqueue("And the other helper?")
    t.prompt("And the other helper?", promptId="prompt-n2", uuid="line-n-prompt-2")
    t.metadata(prompt="And the other helper?")
    t.text("msg_n7", "It wrote on its own.", uuid="line-n-text-7")
    t.cost_state(0.04, 8000, 400)
    orphan = Transcript(sid, cwd, "2026-12-02T15:00:01.000Z", agent_id="cccc3333")
    orphan.prompt("ORPHAN: say hello", promptId="prompt-n1", uuid="line-x-prompt")
    orphan.text("msg_n8", "Hello.", uuid="line-x-text")
    slug = projects / _slug(cwd)
    t.write(slug / f"{sid}.jsonl")
    subagents = slug / sid / "subagents"
    outer.write(subagents / "agent-aaaa1111.jsonl")
    inner.write(subagents / "agent-bbbb2222.jsonl")
    orphan.write(subagents / "agent-cccc3333.jsonl")
    (subagents / "agent-aaaa1111.meta.json").write_text(json.dumps(meta("toolu_n_outer", "Outer helper")))
    inner_meta = meta("toolu_n_inner", "Inner helper", depth=2)
    (subagents / "agent-bbbb2222.meta.json").write_text(json.dumps(inner_meta))


BUILDERS: dict[str, Callable[[Path], None]] = {
    "resume_plan_refused": resume_plan_refused,
    "compact": compact,
    "other_tools": other_tools,
    "killed": killed,
    "subagents_nested": subagents_nested,
}


def build(case: str, projects: Path) -> None:
    if projects.exists():
        shutil.rmtree(projects)
    projects.mkdir(parents=True)
    BUILDERS[case](projects)


def main() -> None:
    for case in BUILDERS:
        build(case, CASES / case / "claude" / "projects")


if __name__ == "__main__":
    main()
