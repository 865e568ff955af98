"""What each agent read is flagged the same way, through the real `postrun` over a real session
file with a planted fake secret: Cline's read_files and Claude Code's Read of a `.env` (a read
step, whose text is scanned and never stored) and Codex's shell `cat .env` (a command, whose output is its record's
stdout), each `secret_in_output` with the masked match and `sensitive_read`; a read outside the
workspace `outside_workspace`; no secret in a redacted export or search."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from postrun.store.db import Database
from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import copy_data
from tests.support.secret_corpus import SECRETS
from tests.support.stored_texts import stored_texts

PLANTED = [case for case in SECRETS if case.name in ("Stripe live key", "DB_PASS", "Postgres URL password")]
ENV_TEXT = "".join(f"{case.text}\n" for case in PLANTED) + "DEBUG=true\n"
MASKED = [
    "Stripe key (detect-secrets StripeDetector) in {where}: sk_live_…(32 chars)",
    "credential assignment (postrun) in {where}: …(14 chars)",
    "password in a URL (postrun) in {where}: …(12 chars)",
]

CLINE_SESSION = "1790000000000_basic"
CLAUDE_CASE = FIXTURES / "claude-code-real" / "a_read_edit_write"
CLAUDE_SESSION = "e144040e-bd9b-4030-8647-79a28a2ca005"
CLAUDE_CWD = "/home/dev/work/a_read_edit_write"
CODEX_CASE = FIXTURES / "codex-real" / "a_commands"
CODEX_SESSION = "01a2330d-2877-74e1-85dd-6d88f53166fa"


def _rewrite_lines(path: Path, change: Any) -> None:
    """Each JSON line of ``path`` through ``change`` (which edits the record in place)."""
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        change(record)
        lines.append(json.dumps(record))
    path.write_text("".join(f"{line}\n" for line in lines))


def _steps(env: dict[str, str], session: str) -> dict[str, dict[str, Any]]:
    exported = run_postrun("export", session, "--format", "json", env=env)
    assert exported.returncode == 0, exported.stderr
    return {step["id"]: step for step in json.loads(exported.stdout)["steps"]}


def _reasons(step: dict[str, Any], kind: str) -> list[str]:
    return sorted(flag["reason"] for flag in step["flags"] if flag["kind"] == kind)


def _never_shared(env: dict[str, str], session: str, words: str) -> None:
    """No planted secret in the redacted exports nor in a redacted search for ``words``."""
    secrets = [case.secret for case in PLANTED]
    for form in ("markdown", "html"):
        shared = run_postrun("export", session, "--format", form, env=env)
        assert shared.returncode == 0, shared.stderr
        assert not [secret for secret in secrets if secret in shared.stdout], form
    found = run_postrun("search", words, "--redact", env=env)
    assert found.returncode == 0 and session[:8] in found.stdout, found.stderr
    assert not [secret for secret in secrets if secret in found.stdout]


def _text_never_stored(env: dict[str, str]) -> None:
    """With the vault off, no byte of the store (records, indexes, side files) holds a secret."""
    reader = Database.open_reader(Path(env["POSTRUN_DB"]))
    try:
        held = b"".join(stored_texts(reader, vault=True))
    finally:
        reader.close()
    files = b"".join(path.read_bytes() for path in Path(env["POSTRUN_DB"]).parent.glob("postrun.db*"))
    for case in PLANTED:
        assert case.secret.encode() not in held and case.secret.encode() not in files, case.name


def test_a_cline_read_is_flagged_masked_and_its_text_never_stored(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data("cline/basic_act", tmp_path / "data")
    messages = root / CLINE_SESSION / f"{CLINE_SESSION}.messages.json"
    document = json.loads(messages.read_text())
    paths = ["/home/dev/app/.env", "/home/dev/notes/todo.md"]  # the workspace is /home/dev/app
    for message in document["messages"]:
        for block in message["content"]:
            if block.get("id") == "toolu_read1":
                block["input"]["files"] = [{"path": path} for path in paths]
            if block.get("tool_use_id") == "toolu_read1":
                for part, path, text in zip(block["content"], paths, (ENV_TEXT, "buy milk\n"), strict=True):
                    part.update(query=path, result=text)
    messages.write_text(json.dumps(document))
    env["POSTRUN_KEEP_RAW"] = "false"
    ingested = run_postrun("ingest", str(root / CLINE_SESSION), env=env)
    assert ingested.returncode == 0, ingested.stderr
    steps = _steps(env, CLINE_SESSION)
    env_read, outside = steps["toolu_read1#0"], steps["toolu_read1#1"]
    assert env_read["type"] == "read" and env_read["payload"] == {"path": paths[0]}
    assert _reasons(env_read, "secret_in_output") == [reason.format(where="the text read") for reason in MASKED]
    assert {flag["kind"] for flag in env_read["flags"]} == {"secret_in_output", "sensitive_read"}
    assert [flag["kind"] for flag in outside["flags"]] == ["outside_workspace"]
    _text_never_stored(env)
    _never_shared(env, CLINE_SESSION, ".env")


def _claude_reads(record: dict[str, Any]) -> None:
    """The session's first Read reads the workspace's `.env`, its second a file outside it."""
    paths = {"toolu_mock_1_1": f"{CLAUDE_CWD}/.env", "toolu_mock_2_0": "/home/dev/notes/todo.md"}
    texts = {"toolu_mock_1_1": ENV_TEXT, "toolu_mock_2_0": "buy milk\n"}
    for block in record.get("message", {}).get("content", []) if isinstance(record.get("message"), dict) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and block.get("id") in paths:
            block["input"]["file_path"] = paths[block["id"]]
        if block.get("type") == "tool_result" and block.get("tool_use_id") in texts:
            tool_id = block["tool_use_id"]
            lines = texts[tool_id].splitlines()
            block["content"] = "".join(f"{number}\t{line}\n" for number, line in enumerate(lines, 1))
            read = record["toolUseResult"]["file"]
            read.update(filePath=paths[tool_id], content=texts[tool_id], numLines=len(lines), startLine=1)


def test_a_claude_code_read_is_flagged_masked_and_its_text_never_stored(tmp_path: Path, env: dict[str, str]) -> None:
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(CLAUDE_CASE / "claude" / "projects", projects)
    transcript = next(projects.glob(f"*/{CLAUDE_SESSION}.jsonl"))
    _rewrite_lines(transcript, _claude_reads)
    env["POSTRUN_KEEP_RAW"] = "false"  # records only: then no byte of the store may hold the text
    ingested = run_postrun("ingest", "--agent", "claude-code", str(transcript), env=env)
    assert ingested.returncode == 0, ingested.stderr
    steps = _steps(env, CLAUDE_SESSION)
    env_read, outside = steps["toolu_mock_1_1"], steps["toolu_mock_2_0"]
    assert env_read["type"] == "read" and env_read["payload"]["path"] == f"{CLAUDE_CWD}/.env"
    assert _reasons(env_read, "secret_in_output") == [reason.format(where="the text read") for reason in MASKED]
    assert {flag["kind"] for flag in env_read["flags"]} == {"secret_in_output", "sensitive_read"}
    assert [flag["kind"] for flag in outside["flags"]] == ["outside_workspace"]
    assert outside["flags"][0]["severity"] == "warn"
    _text_never_stored(env)
    _never_shared(env, CLAUDE_SESSION, ".env")


def _codex_cat_env(record: dict[str, Any]) -> None:
    """The rollout's first command (`ls -1`, call_1_1) becomes `cat .env`, which printed the
    planted secrets; its second (call_2_0) reads a file outside the workspace."""
    payload = record["payload"]
    commands = {"call_1_1": ("cat .env", ".env", ENV_TEXT), "call_2_0": ("cat /etc/hosts", "/etc/hosts", "localhost\n")}
    item = payload.get("item") if payload.get("type") == "item_completed" else None
    if isinstance(item, dict) and item.get("id") in commands:
        command, path, output = commands[item["id"]]
        item.update(
            command=["/bin/bash", "-lc", command],
            parsed_cmd=[{"type": "read", "cmd": command, "name": Path(path).name, "path": path}],
            aggregated_output=output,
            exit_code=0,
            status="completed",
        )
    if payload.get("call_id") in commands:
        command, _, output = commands[payload["call_id"]]
        if payload.get("type") == "function_call":
            payload["arguments"] = json.dumps({"cmd": command})
        elif payload.get("type") == "function_call_output":
            head = "Chunk ID: 225c34\nWall time: 0.0953 seconds\nProcess exited with code 0\nOriginal token count: 3"
            payload["output"] = f"{head}\nOutput:\n{output}"


def test_a_codex_cat_of_env_is_flagged_masked(tmp_path: Path, env: dict[str, str]) -> None:
    sessions = tmp_path / "codex" / "sessions"
    shutil.copytree(CODEX_CASE / "sessions", sessions)
    rollout = next(sessions.rglob(f"rollout-*-{CODEX_SESSION}.jsonl"))
    _rewrite_lines(rollout, _codex_cat_env)
    ingested = run_postrun("ingest", "--agent", "codex", str(rollout), env=env)
    assert ingested.returncode == 0, ingested.stderr
    steps = _steps(env, CODEX_SESSION)
    cat, outside = steps["call_1_1"], steps["call_2_0"]
    assert cat["type"] == "command" and cat["payload"]["command"] == "cat .env"
    assert _reasons(cat, "secret_in_output") == [reason.format(where="stdout") for reason in MASKED]
    assert {flag["kind"] for flag in cat["flags"]} == {"secret_in_output", "sensitive_read"}
    assert [flag["kind"] for flag in outside["flags"]] == ["outside_workspace"]
    _never_shared(env, CODEX_SESSION, "env")
