"""The real `postrun` executable over the fixtures: ingest, sessions, show, export, search."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from tests.conftest import FIXTURES, postrun_command, run_postrun
from tests.support.claude_lines import Transcript
from tests.support.cli_cases import facts_through_cli

CASES = sorted(
    [p for p in (FIXTURES / "cline").iterdir() if (p / "expect.json").exists()]
    + [p for p in (FIXTURES / "cline-real").iterdir() if (p / "expect.json").exists()]
)


def copy_data(case: Path, tmp_path: Path) -> Path:
    """A writable copy of a fixture's Cline data dir; returns its sessions root."""
    target = tmp_path / "cline" / case.name
    shutil.copytree(case / "data", target)
    return target / "sessions"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fixture_facts_hold_through_ingest_and_export(case: Path, tmp_path: Path, env: dict[str, str]) -> None:
    report = facts_through_cli(case, copy_data(case, tmp_path), "cline", env, tmp_path / "out")
    assert report == "", report


def test_ingest_prints_one_line_per_session_and_is_idempotent(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    db = env["POSTRUN_DB"]
    first = run_postrun("ingest", "--agent", "cline", str(root), env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"ingested cline session 1790000000000_basic: 15 steps, 1 turn, 1 segment -> {db}\n"
    again = run_postrun("ingest", "--agent", "cline", str(root / "1790000000000_basic"), env=env)
    assert again.stdout.startswith("unchanged cline session 1790000000000_basic: 15 steps")


def test_every_target_form(tmp_path: Path, env: dict[str, str]) -> None:
    home_root = Path(env["HOME"]) / ".cline" / "data" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", home_root)
    by_id = run_postrun("ingest", "1790000000000_basic", env=env)
    assert by_id.returncode == 0 and by_id.stdout.startswith("ingested cline session 1790000000000_basic")
    root = copy_data(FIXTURES / "cline" / "proceed_while_running", tmp_path)
    messages = root / "1790000200000_procd" / "1790000200000_procd.messages.json"
    by_file = run_postrun("ingest", "--agent", "cline", str(messages), env=env)
    assert by_file.returncode == 0 and "1790000200000_procd" in by_file.stdout
    missing = run_postrun("ingest", "1790000999999_nopee", env=env)
    assert missing.returncode == 1
    assert str(home_root) in missing.stderr and "Traceback" not in missing.stderr


def test_junk_is_warned_about_and_a_torn_file_fails_alone(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "mid_write_and_junk", tmp_path)
    result = run_postrun("ingest", "--agent", "cline", str(root), env=env)
    assert result.returncode == 1
    assert result.stdout.startswith("ingested cline session 1790000400000_goodd")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1
    assert "1790000400001_halfw.messages.json: messages file not parseable yet (mid-write?)" in errors[0]
    warnings = result.stderr.count("warning: ")
    assert warnings >= 2 and "bad name" in result.stderr and "notes.txt" in result.stderr
    assert ".tmp-folder" not in result.stderr


# `postrun` whose mapping fails in a way nobody foresaw, for the session named first.
UNFORESEEN = """
import sys
import postrun.agents.cline.adapter
from postrun.cli import main
failing_id = sys.argv.pop(1)
real = postrun.agents.cline.adapter.map_session
def mapping(files, *args, **kwargs):
    if files.location.session_id == failing_id:
        raise RuntimeError("nobody foresaw this")
    return real(files, *args, **kwargs)
postrun.agents.cline.adapter.map_session = mapping
sys.argv[0] = "postrun"
main()
"""


def test_an_unforeseen_error_is_that_session_s_one_line_and_the_others_are_stored(
    tmp_path: Path, env: dict[str, str]
) -> None:
    first = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    second = copy_data(FIXTURES / "cline" / "plan_act_resumed_open", tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", UNFORESEEN, "1790000000000_basic", "ingest", str(first), str(second)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("ingested cline session 1790000100000_plans: "), result.stdout
    messages = first / "1790000000000_basic" / "1790000000000_basic.messages.json"
    assert result.stderr == f"error: {messages}: internal error: RuntimeError: nobody foresaw this\n"


def test_read_commands_leave_a_file_that_is_not_a_store_as_it_was(tmp_path: Path, env: dict[str, str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n" * 100)
    foreign = tmp_path / "other.db"
    with apsw.Connection(str(foreign)) as connection:
        connection.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    for path, reason in ((notes, "the file is not a SQLite database"), (foreign, "not a Postrun store")):
        path.chmod(0o644)
        before = path.read_bytes()
        for command in (("sessions",), ("search", "x"), ("show", "1790000000000_basic"), ("export", "17900")):
            result = run_postrun("--db", str(path), *command, env=env)
            assert result.returncode == 1, (path, command)
            assert result.stderr.startswith(f"error: {path}: ") and reason in result.stderr, result.stderr
            assert result.stderr.count("\n") == 1, result.stderr
        assert (oct(path.stat().st_mode & 0o777), path.read_bytes() == before) == ("0o644", True), path
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [path.name]
    empty = tmp_path / "empty.txt"
    empty.touch(mode=0o644)
    empty.chmod(0o644)
    result = run_postrun("--db", str(empty), "sessions", env=env)
    assert (result.returncode, result.stderr) == (0, f"no sessions stored in {empty}\n")  # as for no file at all
    assert (oct(empty.stat().st_mode & 0o777), empty.stat().st_size) == ("0o644", 0)  # a read leaves it alone


@pytest.mark.parametrize(
    "command",
    [("sessions",), ("search", "off-by-one"), ("export", "1790000000000_basic"), ("show", "1790000000000_basic")],
)
def test_a_reader_that_leaves_early_is_a_quiet_exit(
    tmp_path: Path, env: dict[str, str], command: tuple[str, ...]
) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    assert run_postrun("ingest", str(root), env=env).returncode == 0
    process = subprocess.Popen(
        [*postrun_command(), *command], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # `| head -0`: the reader is gone before the first line is written
    stderr = process.stderr.read()
    assert (process.wait(60), stderr) == (141, "")


def test_a_torn_rewrite_leaves_stored_data_as_it_was(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    assert run_postrun("ingest", str(root), env=env).returncode == 0
    before = run_postrun("export", "1790000000000_basic", env=env).stdout
    messages = root / "1790000000000_basic" / "1790000000000_basic.messages.json"
    messages.write_bytes(messages.read_bytes()[:1000])
    torn = run_postrun("ingest", str(root), env=env)
    assert torn.returncode == 1 and "not parseable yet (mid-write?)" in torn.stderr
    assert run_postrun("export", "1790000000000_basic", env=env).stdout == before


def test_unknown_agent_is_a_usage_error(env: dict[str, str], tmp_path: Path) -> None:
    result = run_postrun("ingest", "--agent", "x", str(tmp_path), env=env)
    assert result.returncode == 2
    assert result.stderr == "error: --agent: unknown agent 'x' (known: cline, claude-code, codex)\n"


def test_sessions_list_and_json(tmp_path: Path, env: dict[str, str]) -> None:
    for case in ("basic_act", "plan_act_resumed_open"):
        run_postrun("ingest", str(copy_data(FIXTURES / "cline" / case, tmp_path)), env=env)
    listing = run_postrun("sessions", env=env)
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert "1790000100000_plans" in lines[0] and "open" in lines[0]  # newest first
    assert "1790000000000_basic" in lines[1] and "ended" in lines[1] and "1 failed" in lines[1]
    assert "Fix the failing date test" in lines[1]
    data = json.loads(run_postrun("sessions", "--json", env=env).stdout)
    plans, basic = data
    assert plans["open"] is True and "ended_at" not in plans
    assert basic["ended_at"] == "2026-09-21T14:13:43.000Z" and basic["failed_steps"] == 1
    for key in (
        "id",
        "agent",
        "started_at",
        "open",
        "steps",
        "failed_steps",
        "title",
        "model",
        "captured_on",
        "updated_at",
    ):
        assert key in basic
    assert basic["model"] == "claude-sonnet-4-6"


def test_sessions_on_a_fresh_machine_is_empty_and_creates_nothing(env: dict[str, str]) -> None:
    result = run_postrun("sessions", env=env)
    assert (result.returncode, result.stdout) == (0, "")
    assert not Path(env["POSTRUN_DB"]).exists()


def test_show_timeline_and_history(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    run_postrun("ingest", str(root), env=env)
    shown = run_postrun("show", "1790000000000_b", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "turn 1 [act]: Fix the failing date test and add a health check" in shown.stdout
    assert "npm test -- date" in shown.stdout and "failed (exit 1, cline_tool_error)" in shown.stdout
    lines = shown.stdout.splitlines()
    failed = next(index for index, line in enumerate(lines) if "npm test -- date  [failed" in line)
    assert lines[failed + 1].strip() == "error: Command exited with code 1"  # the first line of the error
    assert "  #10   other    search_codebase: health  [ok]" in lines  # each step's key input
    assert "  #12   other    fetch_web_content: https://example.com/health-checks  [ok, accepted]" in lines
    messages = root / "1790000000000_basic" / "1790000000000_basic.messages.json"
    doc = json.loads(messages.read_text())
    doc["messages"] = doc["messages"][:-1]  # a checkpoint restore drops the last reply
    messages.write_text(json.dumps(doc))
    assert run_postrun("ingest", str(root), env=env).stdout.startswith("updated")
    history = run_postrun("show", "1790000000000_basic", "--history", env=env)
    assert "removed  step msg_a7#0: assistant: The date test passes and /health exists." in history.stdout
    # The last reply carried metrics: the session record as it was is kept too.
    assert "changed  session 1790000000000_basic: session started 2026-09-21T14:13:19.500Z," in history.stdout
    assert "$0.0340 over 7 API requests" in history.stdout


def test_show_explains_reference_only_and_its_help_has_a_legend(tmp_path: Path, env: dict[str, str]) -> None:
    run_postrun("ingest", str(copy_data(FIXTURES / "cline" / "proceed_while_running", tmp_path)), env=env)
    shown = run_postrun("show", "1790000200000_procd", env=env).stdout
    assert "  #1    command  npm run dev  [ok, reference only]" in shown.splitlines()
    assert shown.splitlines()[-1] == (
        "reference only: the agent's files do not hold all of this step's content"
        " (a command left running, an output kept elsewhere); what they hold is shown"
    )
    basic = copy_data(FIXTURES / "cline" / "basic_act", tmp_path / "basic")
    run_postrun("ingest", str(basic), env=env)
    assert "reference only:" not in run_postrun("show", "1790000000000_basic", env=env).stdout  # none there
    help_text = " ".join(run_postrun("show", "--help", env=env | {"COLUMNS": "200"}).stdout.split())
    for marker in ("[ok]", "failed (exit", "pending", "accepted", "rejected", "reference only", "!", "↳"):
        assert marker in help_text, marker


def test_export_formats_and_errors(tmp_path: Path, env: dict[str, str]) -> None:
    run_postrun("ingest", str(copy_data(FIXTURES / "cline" / "basic_act", tmp_path)), env=env)
    jsonl = run_postrun("export", "1790000000000_basic", "--format", "jsonl", env=env)
    records = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert records[0]["record"] == "session"
    kinds = [r["record"] for r in records]
    assert kinds == sorted(kinds, key=["session", "segment", "actor", "turn", "step"].index)
    seqs = [r["data"]["seq"] for r in records if r["record"] == "step"]
    assert seqs == sorted(seqs) == list(range(15))
    markdown = run_postrun("export", "1790000000000_basic", "--format", "markdown", env=env).stdout
    assert markdown.startswith("# Fix the failing date test and add a health check")
    assert "**Command** `npm test -- date` — failed (exit 1, cline_tool_error)" in markdown
    target = tmp_path / "out.json"
    written = run_postrun("export", "1790000000000_basic", "-o", str(target), env=env)
    assert written.returncode == 0 and written.stdout == ""
    assert json.loads(target.read_text())["schema_version"] == "1.2"
    unknown = run_postrun("export", "nope", env=env)
    assert unknown.returncode == 1
    assert unknown.stderr == f"error: no session nope in {env['POSTRUN_DB']}\n"
    bad_format = run_postrun("export", "1790000000000_basic", "--format", "xml", env=env)
    assert bad_format.returncode == 2


def test_search(tmp_path: Path, env: dict[str, str]) -> None:
    run_postrun("ingest", str(copy_data(FIXTURES / "cline" / "basic_act", tmp_path)), env=env)
    hits = json.loads(run_postrun("search", "npm", "--failed", "--json", env=env).stdout)
    assert [hit["step_id"] for hit in hits] == ["toolu_cmd1#0"]
    text = run_postrun("search", "health", "--type", "edit", env=env).stdout
    assert "toolu_edit2#0" in text
    bad = run_postrun("search", "x", "--type", "nope", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --type: unknown step type")


def test_a_filter_alone_is_a_search(tmp_path: Path, env: dict[str, str]) -> None:
    run_postrun("ingest", str(copy_data(FIXTURES / "cline" / "basic_act", tmp_path)), env=env)
    failed = run_postrun("search", "--failed", env=env)
    assert failed.returncode == 0, failed.stderr
    assert len(failed.stdout.splitlines()) == 1  # the fixture's one failed step, with its reason
    assert "toolu_cmd1#0" in failed.stdout and "info failed: " in failed.stdout, failed.stdout
    flagged = json.loads(run_postrun("search", "--flag", "failed", "--json", env=env).stdout)
    assert [hit["step_id"] for hit in json.loads(run_postrun("search", "--failed", "--json", env=env).stdout)] == [
        hit["step_id"] for hit in flagged
    ]
    edits = json.loads(run_postrun("search", "--type", "edit", "--json", env=env).stdout)
    assert edits and {hit["type"] for hit in edits} == {"edit"}
    assert [hit["at"] for hit in edits] == sorted((hit["at"] for hit in edits), reverse=True)  # newest first
    assert json.loads(run_postrun("search", "--since", "2099-01-01", "--json", env=env).stdout) == []
    nothing = run_postrun("search", env=env)
    assert nothing.returncode == 2
    assert (
        nothing.stderr
        == "error: QUERY: empty search query: give words, or a filter (--flag, --failed, --type, --since, --agent)\n"
    )


def test_bad_configuration_exits_78_naming_file_and_key(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text("poll_secs = 3\n")
    result = run_postrun("--config", str(config), "sessions", env=env)
    assert result.returncode == 78
    assert str(config) in result.stderr and "poll_secs" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_store_from_a_newer_postrun_exits_78(env: dict[str, str]) -> None:
    db = Path(env["POSTRUN_DB"])
    db.parent.mkdir(parents=True)
    connection = apsw.Connection(str(db))
    connection.execute("pragma user_version = 999")
    connection.close()
    result = run_postrun("sessions", env=env)
    assert result.returncode == 78
    assert "newer Postrun" in result.stderr and "Traceback" not in result.stderr


def test_version(env: dict[str, str]) -> None:
    from postrun import __version__

    result = run_postrun("--version", env=env)
    assert (result.returncode, result.stdout) == (0, f"postrun {__version__}\n")


def test_one_bad_target_does_not_cancel_the_others(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    result = run_postrun("ingest", "1790000999999_nopee", str(root / "1790000000000_basic"), env=env)
    assert result.returncode == 1
    assert result.stdout.startswith("ingested cline session 1790000000000_basic")
    assert result.stderr.startswith("error: 1790000999999_nopee: no such session in ")


@pytest.mark.parametrize("agent", ["cline", "claude-code", "codex"])
def test_a_name_the_system_will_not_look_at_is_its_own_one_line_failure(
    agent: str, tmp_path: Path, env: dict[str, str]
) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    too_long = str(tmp_path / ("x" * 5000))
    targets = [too_long, str(root / "1790000000000_basic")] if agent == "cline" else [too_long]
    result = run_postrun("ingest", "--agent", agent, *targets, env=env)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == f"error: {too_long}: cannot be looked at: File name too long"
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if agent == "cline":
        assert result.stdout.startswith("ingested cline session 1790000000000_basic")


def test_a_target_that_names_nothing_creates_no_store(env: dict[str, str]) -> None:
    result = run_postrun("ingest", "1790000999999_nopee", env=env)
    assert result.returncode == 1
    assert not Path(env["POSTRUN_DB"]).exists()


def test_session_text_cannot_drive_the_terminal(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    messages = root / "1790000000000_basic" / "1790000000000_basic.messages.json"
    doc = json.loads(messages.read_text())
    doc["messages"][0]["content"][0]["text"] = '<user_input mode="act">retitled\x1b]0;pwned\x07 now</user_input>'
    messages.write_text(json.dumps(doc))
    run_postrun("ingest", str(root), env=env)
    for args in (["sessions"], ["show", "1790000000000_basic"]):
        output = run_postrun(*args, env=env).stdout
        assert "\x1b" not in output and "\x07" not in output
        assert "retitled\\x1b]0;pwned\\x07 now" in output
    exported = json.loads(run_postrun("export", "1790000000000_basic", env=env).stdout)
    assert exported["steps"][0]["payload"]["text"] == "retitled\x1b]0;pwned\x07 now"  # stored exactly


def test_no_field_from_the_agent_s_files_reaches_the_terminal_raw(tmp_path: Path, env: dict[str, str]) -> None:
    root = copy_data(FIXTURES / "cline" / "basic_act", tmp_path)
    folder = root / "1790000000000_basic"
    osc = "\x1b]0;pwned\x07"
    manifest = json.loads((folder / "1790000000000_basic.json").read_text())
    manifest.update(model=f"m{osc}", provider=f"p{osc}", status=f"s{osc}", workspace_root=f"/w{osc}")
    manifest["metadata"]["git"] = {"url": f"u{osc}", "branch": f"b{osc}"}
    (folder / "1790000000000_basic.json").write_text(json.dumps(manifest))
    messages = folder / "1790000000000_basic.messages.json"
    doc = json.loads(messages.read_text())
    doc["messages"][0]["content"][0]["text"] = f'<user_input mode="a{osc}">go</user_input>'
    doc.setdefault("origin", {})["version"] = f"4{osc}"
    messages.write_text(json.dumps(doc))
    assert run_postrun("ingest", str(root), env=env).returncode == 0
    output = run_postrun("show", "1790000000000_basic", env=env).stdout
    assert "\x1b" not in output and "\x07" not in output
    for shown in ("m", "p", "s", "/w", "u", "b", "4", "a"):
        assert f"{shown}\\x1b]0;pwned\\x07" in output, shown


def test_the_json_listings_write_bidi_and_c1_controls_as_escapes(tmp_path: Path, env: dict[str, str]) -> None:
    # README: bidi controls and terminal escapes are shown as escapes in `sessions` and the JSON
    # outputs (as `\\u` escapes: the same values); a U+009B is a CSI to a terminal that takes C1.
    hostile = "\u202eevil\u202c \x9b31m"
    transcript = Transcript("bad0bad0-0000-4000-8000-000000000001", "/srv/app")
    transcript.prompt(f"rtlprompt {hostile}")
    transcript.call("msg_1", f"toolu_{hostile}", "Bash", {"command": "echo rtlcmd", "description": "x"})
    transcript.result(f"toolu_{hostile}", "ok", tool_use_result={"stdout": "ok", "stderr": "", "interrupted": False})
    transcript.cost_state(0.01)
    transcript.write(tmp_path / "projects" / "-srv-app" / f"{transcript.session_id}.jsonl")
    assert run_postrun("ingest", "--agent", "claude-code", str(tmp_path / "projects"), env=env).returncode == 0
    listing = run_postrun("sessions", "--json", env=env).stdout
    hits = run_postrun("search", "rtlcmd", "--json", env=env).stdout
    for output in (listing, hits):
        assert "\u202e" not in output and "\x9b" not in output, output
    assert json.loads(listing)[0]["title"] == f"rtlprompt {hostile}"  # the same value, escaped
    assert json.loads(hits)[0]["step_id"] == f"toolu_{hostile}"


def test_search_arguments_are_checked_even_without_a_store(env: dict[str, str]) -> None:
    assert run_postrun("search", "x", "--type", "nope", env=env).returncode == 2
    assert run_postrun("search", "x", "--since", "yesterday", env=env).returncode == 2
    assert run_postrun("search", "   ", env=env).returncode == 2
    assert not Path(env["POSTRUN_DB"]).exists()


def test_config_path_works_when_the_file_is_broken(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "broken.toml"
    config.write_text("this is = = not toml\n")
    env["POSTRUN_CONFIG"] = str(config)
    assert run_postrun("sessions", env=env).returncode == 78
    shown = run_postrun("config", "path", env=env)
    assert (shown.returncode, shown.stdout) == (0, f"{config}\n")


def test_a_relative_home_is_one_line_naming_it(env: dict[str, str]) -> None:
    for args in (("sessions",), ("config", "show"), ("doctor",)):
        result = run_postrun(*args, env=env | {"HOME": "relhome"})
        assert (result.returncode, result.stdout) == (78, ""), (args, result.stdout, result.stderr)
        assert result.stderr == "error: HOME: must be an absolute path (got 'relhome')\n", args
