"""``postrun mcp`` driven by the MCP SDK's own client over stdio, against a store the real ingest built."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from tests.conftest import FIXTURES, REPO, postrun_command, run_postrun
from tests.support.recall import (
    BASIC,
    LIVE_WORD,
    PLANTED,
    PLANTED_SECRETS,
    Client,
    RecallStore,
    build_recall_store,
    derived_session,
    mcp_client,
    store_fingerprint,
)
from tests.support.secret_samples import SAMPLES

REVIEW = "1790000100000_review"  # cline/review_flags: a secret of every kind the detector knows
PARAMETERS = {
    "search": {"query", "agent", "workspace", "outcome", "flag", "since", "limit", "include_active"},
    "list_sessions": {"agent", "workspace", "since", "limit"},
    "get_session": {"session_id"},
    "get_steps": {"session_id", "around_seq", "from_seq", "limit", "max_chars"},
    "file_history": {"path", "workspace", "limit", "include_active"},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> RecallStore:
    return build_recall_store(tmp_path_factory.mktemp("recall"))


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("mcp-log") / "stderr.txt"
    yield path
    assert "Traceback" not in path.read_text(), path.read_text()


@pytest.fixture(scope="module")
def client(store: RecallStore, server_log: Path) -> Iterator[Client]:
    with server_log.open("w") as stderr, mcp_client(store.env, stderr) as connected:
        yield connected


def _hits(answer: dict[str, Any]) -> list[tuple[str, int]]:
    return [(hit["session_id"], hit["seq"]) for hit in answer["hits"]]


def test_the_five_tools_with_their_parameters_and_schemas(client: Client) -> None:
    listed = client.run(client.session.list_tools)
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == set(PARAMETERS)
    for name, tool in tools.items():
        assert set(tool.input_schema["properties"]) == PARAMETERS[name], name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        assert tool.annotations is not None and tool.annotations.read_only_hint is True, name
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["search"].input_schema["properties"]["limit"]["maximum"] == 50
    assert tools["list_sessions"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["get_steps"].input_schema["properties"]["limit"]["maximum"] == 100
    # Every answer holds to its tool's output schema (checked here, not only by the SDK).
    answers = {
        "search": client.data("search", query="date test"),
        "list_sessions": client.data("list_sessions"),
        "get_session": client.data("get_session", session_id=BASIC),
        "get_steps": client.data("get_steps", session_id=BASIC),
        "file_history": client.data("file_history", path="/home/dev/app/src/date.ts"),
    }
    for name, answer in answers.items():
        jsonschema.validate(answer, tools[name].output_schema)


def test_search_finds_filters_and_cites(client: Client) -> None:
    found = client.data("search", query="date test")
    assert (BASIC, 5) in _hits(found)
    hit = next(h for h in found["hits"] if (h["session_id"], h["seq"]) == (BASIC, 5))
    assert hit == hit | {
        "step_id": "toolu_cmd1#0",
        "type": "command",
        "outcome": "failed",
        "at": "2026-09-21T14:13:24.000Z",
        "agent": "cline",
        "workspace": "/home/dev/app",
        "actor_id": "root",
        "show": f"postrun show {BASIC}",
        "url": f"http://127.0.0.1:8765/s/{BASIC}#step-5",
    }
    assert "npm test -- date" in hit["snippet"]
    failed = client.data("search", query="date test", outcome="failed")
    assert failed["hits"] and {h["outcome"] for h in failed["hits"]} == {"failed"}
    assert client.data("search", query="date test", agent="claude-code")["hits"] == []  # any kind is a filter
    assert {h["workspace"] for h in client.data("search", query="date", workspace="/home/dev/app")["hits"]} == {
        "/home/dev/app"
    }
    recent = client.data("search", query="src", since="2026-11-01")
    assert recent["hits"] and all(h["at"] >= "2026-11" for h in recent["hits"])
    flagged = client.data("search", query="", flag="dangerous_command", limit=50)
    assert flagged["hits"] and all("dangerous_command" in h["snippet"] for h in flagged["hits"])
    one = client.data("search", query="date", limit=1)
    assert len(one["hits"]) == 1 and one["more"] is True


def test_list_sessions_newest_first_with_filters(client: Client, store: RecallStore) -> None:
    listed = client.data("list_sessions", limit=100)["sessions"]
    ids = [row["id"] for row in listed]
    assert store.live_id == ids[0] and BASIC in ids and PLANTED in ids
    assert [row["started_at"] for row in listed] == sorted((row["started_at"] for row in listed), reverse=True)
    basic = next(row for row in listed if row["id"] == BASIC)
    assert basic == basic | {
        "agent": "cline",
        "title": "Fix the failing date test and add a health check",
        "workspace": "/home/dev/app",
        "steps": 15,
        "failed": 1,
        "flagged": 1,
        "verdict": None,
        "show": f"postrun show {BASIC}",
        "url": f"http://127.0.0.1:8765/s/{BASIC}",
    }
    page = client.data("list_sessions", limit=2)
    assert len(page["sessions"]) == 2 and page["more"] is True
    by_workspace = client.data("list_sessions", workspace="/home/dev/work/a_read_edit")["sessions"]
    assert [row["id"] for row in by_workspace] == ["1795976499744_q4jun"]
    assert {r["id"][:4] for r in client.data("list_sessions", since="2026-11-01")["sessions"]} <= {"1795", "1796"}
    assert client.data("list_sessions", agent="codex")["sessions"] == []


def test_get_session_by_prefix(client: Client) -> None:
    overview = client.data("get_session", session_id="1795976639")
    assert overview["id"] == "1795976639977_qou3n"
    assert [(t["index"], t["prompt"], t["steps"], t["first_seq"]) for t in overview["turns"]] == [
        (1, "Plan how to add a greet(name) function to app.py and a test for it.", 6, 0),
        (2, "Plan approved. Implement it.", 6, 6),
    ]
    assert overview["counts"] == {
        "steps": 12,
        "by_type": {"command": 3, "edit": 2, "message": 6, "read": 1},
        "failed": 2,
        "flagged": 2,
    }
    assert overview["metrics"]["api_requests"] == 5 and overview["actors"] == [
        {"id": "root", "type": "root", "label": "lead"}
    ]
    assert overview["show"] == "postrun show 1795976639977_qou3n"
    helpers = client.data("get_session", session_id="1795976749765")["actors"]
    assert len(helpers) > 1 and all(actor.get("parent_id") for actor in helpers[1:])
    assert "ambiguous" in client.error("get_session", session_id="17")
    assert "no session nope" in client.error("get_session", session_id="nope")


def test_get_steps_as_the_export_has_them(client: Client, store: RecallStore) -> None:
    exported = orjson.loads(run_postrun("export", BASIC, "-f", "json", env=store.env).stdout)["steps"]
    whole = client.data("get_steps", session_id=BASIC, limit=100, max_chars=20_000)
    assert whole["steps"] == exported and whole["next_from_seq"] is None and whole["cut_fields"] == 0
    around = client.data("get_steps", session_id=BASIC, around_seq=5, limit=4)
    assert [s["seq"] for s in around["steps"]] == [3, 4, 5, 6] and around["next_from_seq"] == 7
    onward = client.data("get_steps", session_id=BASIC, from_seq=around["next_from_seq"], limit=4)
    assert [s["seq"] for s in onward["steps"]] == [7, 8, 9, 10]
    short = client.data("get_steps", session_id=BASIC, from_seq=13, max_chars=100)
    assert short["steps"][0]["payload"]["stdout"] == "Tests: 12 passed, 12 total" and short["cut_fields"] == 0
    review = client.data("get_steps", session_id=REVIEW, limit=100, max_chars=100)
    assert review["cut_fields"] > 0
    cut = [v for s in review["steps"] for v in s["payload"].values() if isinstance(v, str) and "[cut:" in v]
    assert cut and all(len(text.split("… [cut:")[0]) == 100 for text in cut)


def test_file_history_newest_first(client: Client, store: RecallStore) -> None:
    history = client.data("file_history", path="/home/dev/app/src/date.ts")
    assert history["path"] == "/home/dev/app/src/date.ts"
    touched = [(t["session_id"], t["seq"], t["type"]) for t in history["touches"]]
    assert touched == [(BASIC, 8, "edit"), (BASIC, 3, "read")]
    edit = history["touches"][0]
    assert (edit["old_text"], edit["new_text"], edit["command"]) == ("export const x = 1", "export const x = 0", None)
    assert edit["url"] == f"http://127.0.0.1:8765/s/{BASIC}#step-8" and edit["show"] == f"postrun show {BASIC}"
    # Relative to a workspace; a command naming the file relative to where it ran counts.
    planted = client.data("file_history", path="src/date.ts", workspace=f"{store.home}/app")
    assert planted["path"] == "~/app/src/date.ts"
    kinds = [(t["seq"], t["type"]) for t in planted["touches"]]
    assert kinds == [(8, "edit"), (6, "command"), (3, "read")]
    assert planted["touches"][1]["command"] == "npx eslint src/date.ts"
    # Answers show the home folder as ~: given back, it means the home folder.
    assert client.data("file_history", path="~/app/src/date.ts") == planted
    assert {h["session_id"] for h in client.data("search", query="date", workspace="~/app/")["hits"]} == {PLANTED}
    assert client.data("file_history", path="/home/dev/app/src/date.tsx")["touches"] == []
    assert len(client.data("file_history", path="/home/dev/app/src/date.ts", limit=1)["touches"]) == 1


def test_bad_parameters_are_one_line_tool_errors(client: Client) -> None:
    reasons = [
        client.error("search", query="date", limit=51),
        client.error("search", query="date", limit=0),
        client.error("search", query="date", outcome="maybe"),
        client.error("search", query="date", since="last tuesday"),
        client.error("search", query="date", flag="no_such_flag"),
        client.error("search", query="   "),
        client.error("search", query="date\x00"),
        client.error("search", query=f"where is {SAMPLES['aws_key'][0]}"),
        client.error("search"),
        client.error("list_sessions", limit=101),
        client.error("get_steps", session_id=BASIC, around_seq=2, from_seq=3),
        client.error("get_steps", session_id=BASIC, max_chars=10),
        client.error("get_steps", session_id=BASIC, limit="many"),
        client.error("file_history", path="src/date.ts"),
        client.error("file_history", path=""),
        client.error("search", query="date " * 400),
        client.error("get_session", session_id="x" * 201),
        client.error("no_such_tool"),
        # Past SQLite's 64-bit integers: a bad parameter, not a crash with no reason.
        client.error("get_steps", session_id=BASIC, from_seq=2**63),
        client.error("get_steps", session_id=BASIC, around_seq=10**30),
        client.error("get_session", session_id=""),
        client.error("get_steps", session_id=""),
    ]
    assert "limit" in reasons[0] and "since" in reasons[3] and "no_such_flag" in reasons[4]
    assert "NUL" in reasons[6]
    assert "secret" in reasons[7] and SAMPLES["aws_key"][0] not in reasons[7]
    assert "relative" in reasons[13]
    assert "bad parameter from_seq" in reasons[18] and "bad parameter around_seq" in reasons[19]
    assert "bad parameter session_id" in reasons[20] and "bad parameter session_id" in reasons[21]
    assert client.data("list_sessions", limit=1)["sessions"]  # still serving


def test_an_unknown_agent_is_a_bad_parameter_not_an_empty_answer(client: Client) -> None:
    # Before: `agent="claude"` (not claude-code) answered no hits and no sessions, which an agent
    # reads as "nothing was done before"; `postrun search --agent claude` refuses it (exit 2).
    for tool, arguments in (("search", {"query": "date"}), ("list_sessions", {})):
        reason = client.error(tool, agent="claude", **arguments)
        assert "unknown agent 'claude'" in reason and "claude-code" in reason, reason
    assert client.data("search", query="date", agent="cline")["hits"]


def test_a_query_with_no_word_is_a_bad_parameter_not_an_empty_answer(client: Client) -> None:
    # Before: "*" (a wildcard an agent tries) or "--" matched nothing, as if nothing was recorded.
    for arguments in ({"query": "*"}, {"query": " -- "}, {"query": "*", "flag": "any"}):
        reason = client.error("search", **arguments)
        assert "holds no word to find" in reason, reason
    assert client.data("search", query="date *")["hits"]  # a word beside it is searched


def test_a_relative_workspace_is_a_bad_parameter_not_an_empty_answer(client: Client) -> None:
    # Before: `workspace="."` or `"app"` matched no root (roots are absolute) and answered nothing.
    for workspace in (".", "app", ""):
        for tool, arguments in (("search", {"query": "date"}), ("list_sessions", {})):
            reason = client.error(tool, workspace=workspace, **arguments)
            assert "workspace" in reason and "not an absolute path" in reason, reason
    assert client.data("list_sessions", workspace="/home/dev/app/")["sessions"]


def _claude_session(case: str, folder: Path, edit: Any) -> Path:
    """The Claude Code fixture ``case``'s projects folder copied under ``folder``, each file's
    JSON passed through ``edit(name, value)`` (a transcript line by line); the transcript's path."""
    source = FIXTURES / "claude-code" / case / "claude" / "projects"
    for file in source.rglob("*.json*"):
        target = folder / file.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if file.suffix == ".jsonl":
            lines = [_edited(line, file.name, edit) for line in file.read_bytes().split(b"\n")]
            target.write_bytes(b"\n".join(lines))
        else:
            target.write_bytes(orjson.dumps(edit(file.name, orjson.loads(file.read_bytes()))))
    (transcript,) = (path for path in folder.rglob("*.jsonl") if "subagents" not in path.parts)
    return transcript


def _edited(line: bytes, name: str, edit: Any) -> bytes:
    try:
        return orjson.dumps(edit(name, orjson.loads(line)))
    except orjson.JSONDecodeError:
        return line  # a torn line the fixture holds on purpose stays as it is


def test_one_huge_step_or_helper_is_bounded_too(tmp_path: Path, env: dict[str, str]) -> None:
    # A Write over a large file: its structured patch is a list of many short lines (no text
    # field is long, so cutting each at max_chars does not bound it); a helper named by a
    # whole paragraph.
    lines = [f"+line {number:07d}" for number in range(100_000)]

    def big_patch(name: str, value: Any) -> Any:
        result = value.get("toolUseResult") if isinstance(value, dict) else None
        if isinstance(result, dict) and result.get("structuredPatch"):
            result["structuredPatch"][0]["lines"] = lines
        return value

    def long_label(name: str, value: Any) -> Any:
        if name.endswith(".meta.json"):
            value["description"] += " and then" * 20_000
        return value

    for case, edit in (("other_tools", big_patch), ("subagents_nested", long_label)):
        transcript = _claude_session(case, tmp_path / case, edit)
        ingested = run_postrun("ingest", "--agent", "claude-code", str(transcript), env=env)
        assert ingested.returncode == 0, ingested.stderr
    with (tmp_path / "stderr.txt").open("w") as stderr, mcp_client(env, stderr) as client:
        before = client.data("get_steps", session_id="c0ffee00-0000-4000-8000-000000000003", limit=100)
        page = client.data("get_steps", session_id="c0ffee00-0000-4000-8000-000000000003", from_seq=8)
        helpers = client.data("get_session", session_id="c0ffee00-0000-4000-8000-000000000006")
    assert before["next_from_seq"] == 8  # the page stops before the step that would not fit
    (step,) = page["steps"]
    assert step["seq"] == 8 and page["next_from_seq"] == 9
    assert len(json.dumps(page)) < 300_000 and page["cut_fields"] >= 1
    (hunk,) = step["payload"]["structured_patch"]
    shown = hunk["lines"]
    assert shown[: len(shown) - 1] == lines[: len(shown) - 1]
    assert shown[-1] == f"… [cut: {len(lines) - len(shown) + 1:,} more items]"
    assert {"oldStart", "newStart", "oldLines", "newLines"} <= set(hunk)  # plain values stay
    assert step["payload"]["path"] == "/home/dev/work/tools/a.py"
    labels = [actor.get("label", "") for actor in helpers["actors"]]
    assert "Outer helper and then and then" in " ".join(labels)
    assert max(len(label) for label in labels) < 300 and len(json.dumps(helpers)) < 20_000


def test_nothing_secret_leaves(client: Client, store: RecallStore) -> None:
    answers = [
        client.data("search", query="aws_access_key_id", include_active=True),
        client.data("search", query="token", limit=50),
        client.data("search", query="deploy key"),
        client.data("search", query="", flag="secret_in_output", limit=50),
        client.data("list_sessions", limit=100),
        client.data("get_session", session_id=PLANTED),
        client.data("get_steps", session_id=PLANTED, limit=100, max_chars=20_000),
        client.data("get_steps", session_id=REVIEW, limit=100, max_chars=20_000),
        client.data("file_history", path=f"{store.home}/app/src/date.ts"),
    ]
    text = json.dumps(answers)
    secrets = [*PLANTED_SECRETS, *(secret for secret, _ in SAMPLES.values())]
    assert [secret for secret in secrets if secret in text] == []
    assert "[REDACTED:aws_key]" in text and "[REDACTED:github_token]" in text
    assert "[REDACTED:anthropic_key]" in answers[5]["title"]
    assert str(store.home) not in text and "~/app" in text
    flags = [flag for step in answers[7]["steps"] for flag in step["flags"] if flag["kind"] == "secret_in_output"]
    assert len(flags) > 1 and all(" chars)" in flag["reason"] for flag in flags)  # the match shown masked


def test_a_title_is_redacted_before_its_lines_are_folded(tmp_path: Path, env: dict[str, str]) -> None:
    # Before: a title (the first prompt) was folded to one line, then redacted: a secret the
    # detector finds by its line, as a pasted .pgpass line, was no longer found and left whole.
    password = "Xk9vQ2mP7rTzqW"
    prompt = f"Fix the failing date test; my ~/.pgpass has\ndb.example.com:5432:app:bob:{password}\nthanks"
    root = tmp_path / "sessions"
    derived_session(FIXTURES / "cline" / "basic_act", root, PLANTED, texts={"Fix the failing date test": prompt})
    assert run_postrun("ingest", "--agent", "cline", str(root), env=env).returncode == 0
    with (tmp_path / "stderr.txt").open("w") as stderr, mcp_client(env, stderr) as client:
        titles = [
            client.data("list_sessions")["sessions"][0]["title"],
            client.data("get_session", session_id=PLANTED)["title"],
        ]
    for title in titles:
        assert password not in title and "[REDACTED:pgpass_password]" in title, title
        assert "\n" not in title  # still one line


def test_active_sessions_left_out_unless_asked(client: Client, store: RecallStore) -> None:
    quiet = client.data("search", query=LIVE_WORD)
    assert quiet["hits"] == [] and quiet["active_left_out"] == 1
    loud = client.data("search", query=LIVE_WORD, include_active=True)
    assert _hits(loud) == [(store.live_id, 13)] and loud["active_left_out"] == 0
    both = client.data("search", query="health check", limit=50)
    assert store.live_id not in {h["session_id"] for h in both["hits"]} and BASIC in {
        h["session_id"] for h in both["hits"]
    }
    path = "/home/dev/live/src/date.ts"
    assert client.data("file_history", path=path)["touches"] == []
    assert [t["seq"] for t in client.data("file_history", path=path, include_active=True)["touches"]] == [8, 3]
    # Listing and reading it stays possible: only search and file history would answer with it.
    assert client.data("get_steps", session_id=store.live_id, from_seq=13, limit=1)["steps"][0]["seq"] == 13


def test_the_store_is_never_changed(tmp_path: Path) -> None:
    store = build_recall_store(tmp_path / "recall")  # its own: other readers leave a -wal behind
    before = store_fingerprint(store.db)
    assert not any(name.startswith("postrun.db-") for name in before[2])
    with (tmp_path / "stderr.txt").open("w") as stderr, mcp_client(store.env, stderr) as client:
        client.data("search", query="date test", include_active=True)
        client.data("search", query="", flag="any")
        client.data("list_sessions", limit=100)
        client.data("get_session", session_id=BASIC)
        client.data("get_steps", session_id=BASIC, limit=100)
        client.data("file_history", path="/home/dev/app/src/date.ts")
        client.error("get_session", session_id="nope")
        assert store_fingerprint(store.db) == before  # while it is open, too
    assert store_fingerprint(store.db) == before


def test_no_store_yet_reads_as_empty(tmp_path: Path, env: dict[str, str]) -> None:
    with (tmp_path / "stderr.txt").open("w") as stderr, mcp_client(env, stderr) as client:
        assert client.data("search", query="date")["hits"] == []
        assert client.data("list_sessions")["sessions"] == []
        assert "no session" in client.error("get_steps", session_id=BASIC)
    assert not Path(env["POSTRUN_DB"]).exists() and not Path(env["POSTRUN_DB"]).parent.exists()


@pytest.mark.parametrize("client_name", ["claude-code", "codex", "cline"])
def test_print_config_is_what_the_readme_shows(client_name: str, env: dict[str, str]) -> None:
    printed = run_postrun("mcp", "--print-config", client_name, env=env)
    assert printed.returncode == 0, printed.stderr
    program = postrun_command()
    shown = printed.stdout.replace(shlex.join(program), "/home/me/.local/bin/postrun")
    shown = shown.replace(json.dumps(program[0])[1:-1], "/home/me/.local/bin/postrun")
    assert shown.strip() in (REPO / "README.md").read_text()
    # The test's store is POSTRUN_DB's, which the client may not pass on: said on stderr.
    assert printed.stderr == (
        f"warning: POSTRUN_DB is set in this shell, and {client_name} may start `postrun mcp` without it:"
        f" `postrun --db PATH mcp --print-config {client_name}` names the store in the snippet\n"
    )
    with_db = run_postrun("--db", "/tmp/other.db", "mcp", "--print-config", client_name, env=env)
    assert "/tmp/other.db" in with_db.stdout and with_db.stderr == ""
    without = {key: value for key, value in env.items() if key != "POSTRUN_DB"}
    assert run_postrun("mcp", "--print-config", client_name, env=without).stderr == ""
    wrong = run_postrun("mcp", "--print-config", "cursor", env=env)
    assert wrong.returncode == 2 and wrong.stderr.strip().count("\n") == 0 and "unknown client" in wrong.stderr


def test_ctrl_c_ends_the_server_while_its_client_is_still_there(env: dict[str, str]) -> None:
    # As run by hand in a terminal: stdin stays open. Ctrl-C used to stop the serving but leave
    # the process waiting on its stdin reader until the terminal sent end-of-file.
    server = subprocess.Popen(
        [*postrun_command(), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
        server.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + b"\n")
        server.stdin.flush()
        assert orjson.loads(server.stdout.readline())["id"] == 1  # serving
        server.send_signal(signal.SIGINT)
        code = server.wait(timeout=10)
    finally:
        server.kill()
        _, stderr = server.communicate()
    assert code == -signal.SIGINT and b"Traceback" not in stderr


def test_a_client_that_stops_reading_ends_the_server_quietly(store: RecallStore) -> None:
    # Before: the answer written to a client that had closed its end of stdout left the server
    # waiting on stdin, then ending with "error: internal error: ExceptionGroup ...", exit 1.
    # README: stdout's reader left early, "a quiet exit, no message", 141 (SIGPIPE's).
    server = subprocess.Popen(
        [*postrun_command(), "mcp"],
        env=store.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    call = {"name": "list_sessions", "arguments": {"limit": 100}}
    try:
        server.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + b"\n")
        server.stdin.flush()
        assert orjson.loads(server.stdout.readline())["id"] == 1  # serving
        server.stdout.close()
        server.stdin.write(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + b"\n")
        server.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}) + b"\n")
        server.stdin.flush()
        code = server.wait(timeout=30)  # stdin stays open: the broken pipe alone ends it
    finally:
        server.kill()
        stderr = server.stderr.read()
        server.stdin.close()
    assert (code, stderr) == (-signal.SIGPIPE, b"")


def test_a_tool_error_shows_the_home_folder_as_tilde(tmp_path: Path, env: dict[str, str]) -> None:
    # README: "Every text passes the same redactor ...: your home folder is ~"; the store's
    # default place is under it, and "no session" names the store.
    env["POSTRUN_DB"] = str(Path(env["HOME"]) / ".local" / "share" / "postrun" / "postrun.db")
    with (tmp_path / "stderr.txt").open("w") as stderr, mcp_client(env, stderr) as client:
        reasons = [client.error(tool, session_id=BASIC) for tool in ("get_session", "get_steps")]
    for reason in reasons:
        assert "no session" in reason and env["HOME"] not in reason, reason
        assert "~/.local/share/postrun/postrun.db" in reason, reason
