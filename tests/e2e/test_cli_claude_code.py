"""The real `postrun` executable over Claude Code's files: every target form, the golden facts
through ingest and export, one listing and search across agents, the vault's copies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_postrun
from tests.support.claude_lines import Transcript
from tests.support.cli_cases import facts_through_cli

CASES = sorted(
    [path for path in (FIXTURES / "claude-code-real").iterdir() if (path / "expect.json").exists()]
    + [path for path in (FIXTURES / "claude-code").iterdir() if (path / "expect.json").exists()]
    + [path for path in (FIXTURES / "claude-code-gen").iterdir() if (path / "expect.json").exists()]
)
NESTED = "c0ffee00-0000-4000-8000-000000000006"
NESTED_SLUG = "-home-dev-work-nested"


def copy_projects(case: Path, tmp_path: Path) -> Path:
    """A writable copy of a case's Claude Code projects folder."""
    target = tmp_path / "claude" / case.name / "projects"
    shutil.copytree(case / "claude" / "projects", target)
    return target


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_facts_hold_through_ingest_and_export(case: Path, tmp_path: Path, env: dict[str, str]) -> None:
    report = facts_through_cli(case, copy_projects(case, tmp_path), "claude-code", env, tmp_path / "out")
    assert report == "", report


def _ingested(result_stdout: str) -> list[str]:
    return [line.split()[3].rstrip(":") for line in result_stdout.splitlines() if line.startswith("ingested ")]


@pytest.mark.parametrize(
    "target",
    [
        NESTED,  # an id, looked up in the projects folder
        f"{NESTED_SLUG}/{NESTED}.jsonl",
        f"{NESTED_SLUG}/{NESTED}",
        NESTED_SLUG,
        ".",
    ],
)
def test_every_target_form(target: str, tmp_path: Path, env: dict[str, str]) -> None:
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    env["POSTRUN_CLAUDE_DIR"] = str(projects)
    argument = target if target == NESTED else str(projects / target)
    result = run_postrun("ingest", "--agent", "claude-code", argument, env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    assert result.stdout.startswith(f"ingested claude-code session {NESTED}: 14 steps, 2 turns, 1 segment -> ")


def test_a_session_id_is_found_through_claude_config_dir(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "claude-config"
    shutil.copytree(FIXTURES / "claude-code" / "subagents_nested" / "claude", config)
    env["CLAUDE_CONFIG_DIR"] = str(config)
    result = run_postrun("ingest", "--agent", "claude-code", NESTED, env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    for command, lead in ((("config", "show"), "# "), (("status",), "")):
        shown = run_postrun(*command, env=env | {"POSTRUN_AGENTS": "cline,claude-code"}).stdout.splitlines()
        assert f"{lead}claude-code sessions folder: {config / 'projects'} (found)" in shown
        assert f"{lead}cline sessions folder: {Path(env['HOME']) / '.cline' / 'data' / 'sessions'} (not found)" in shown
    assert "claude_dir = (not set)  (default)" in run_postrun("config", "show", env=env).stdout.splitlines()


def test_a_sub_agent_s_file_ingests_its_session_and_says_so(tmp_path: Path, env: dict[str, str]) -> None:
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    path = projects / NESTED_SLUG / NESTED / "subagents" / "agent-bbbb2222.jsonl"
    result = run_postrun("ingest", "--agent", "claude-code", str(path), env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    assert f"note: {path}: a sub-agent of session {NESTED}: ingesting that session" in result.stderr


def test_targets_that_name_nothing_fail_alone(tmp_path: Path, env: dict[str, str]) -> None:
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    env["POSTRUN_CLAUDE_DIR"] = str(projects)
    result = run_postrun("ingest", "--agent", "claude-code", "no-such-session", NESTED, env=env)
    assert result.returncode == 1
    assert _ingested(result.stdout) == [NESTED]
    assert result.stderr.startswith(f"error: no-such-session: no such session in {projects}")
    assert "Traceback" not in result.stderr


def test_both_agents_in_one_listing_and_search(tmp_path: Path, env: dict[str, str]) -> None:
    cline = tmp_path / "cline"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", cline)
    assert run_postrun("ingest", "--agent", "cline", str(cline / "sessions"), env=env).returncode == 0
    projects = copy_projects(FIXTURES / "claude-code-real" / "b_bash", tmp_path)
    assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=env).returncode == 0
    listed = run_postrun("sessions", "--json", env=env)
    agents = sorted(session["agent"] for session in json.loads(listed.stdout))
    assert agents == ["claude-code", "cline"]
    only = run_postrun("sessions", "--agent", "claude-code", env=env)
    assert [line.split()[2] for line in only.stdout.splitlines()] == ["claude-code"]
    for agent, hits in (("claude-code", 1), ("cline", 0)):
        found = run_postrun("search", "STATUS-OK", "--agent", agent, "--json", env=env)
        assert found.returncode == 0, found.stderr
        assert len(json.loads(found.stdout)) == hits
    flagged = run_postrun("search", "--flag", "failed", "--agent", "claude-code", env=env)
    assert {line.split()[2] for line in flagged.stdout.splitlines()} == {"toolu_mock_2_0", "toolu_mock_4_0"}


def test_the_vault_gives_back_every_file_byte_for_byte_after_claude_deletes_them(
    tmp_path: Path, env: dict[str, str]
) -> None:
    for case in ("b_bash", "e_subagents"):
        projects = copy_projects(FIXTURES / "claude-code-real" / case, tmp_path)
        assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=env).returncode == 0
        before = {path.relative_to(projects): path.read_bytes() for path in projects.rglob("*") if path.is_file()}
        (session_folder,) = projects.iterdir()
        (transcript,) = session_folder.glob("*.jsonl")
        shutil.rmtree(projects)  # Claude Code's cleanup (cleanupPeriodDays)
        back = tmp_path / "back" / case
        restored = run_postrun("raw", transcript.stem, "--to", str(back), env=env)
        assert restored.returncode == 0, restored.stderr
        after = {path.relative_to(back): path.read_bytes() for path in back.rglob("*") if path.is_file()}
        assert after == before
        shown = run_postrun("show", transcript.stem, env=env)
        assert shown.returncode == 0, shown.stderr
        assert f"source    removed: {transcript} is gone (its agent deleted it)" in shown.stdout
    doctor = run_postrun("doctor", env=env)
    (line,) = [line for line in doctor.stdout.splitlines() if line.split()[1:2] == ["sources:"]]
    assert line.startswith("ok    sources: 2 of 2 stored sessions' files were deleted by their agent (kept here): ")


def test_reingest_forget_and_exclude_work_for_claude_code_sessions(tmp_path: Path, env: dict[str, str]) -> None:
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=env).returncode == 0
    before = run_postrun("export", NESTED, "--format", "json", env=env).stdout
    shutil.rmtree(projects)  # the files are gone: the vault's copies are what is left
    again = run_postrun("reingest", NESTED, env=env)
    assert again.returncode == 0, again.stderr
    assert run_postrun("export", NESTED, "--format", "json", env=env).stdout == before
    forgotten = run_postrun("forget", NESTED, "--yes", env=env)
    assert forgotten.returncode == 0, forgotten.stderr
    gone = run_postrun("export", NESTED, "--format", "json", env=env)
    assert (gone.returncode, gone.stderr.count("\n")) == (1, 1), gone.stderr
    assert f"no session {NESTED} in " in gone.stderr, gone.stderr
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path / "again")
    refused = run_postrun("ingest", "--agent", "claude-code", str(projects), env=env)
    assert "forgotten" in refused.stderr and _ingested(refused.stdout) == []
    excluded = run_postrun(
        "ingest", "--agent", "claude-code", "--force", str(projects), env=env | {"POSTRUN_EXCLUDE": "/home/dev/work/*"}
    )
    assert _ingested(excluded.stdout) == []
    assert "not recorded: workspace /home/dev/work/nested matches exclude" in excluded.stderr


def test_forget_names_the_forks_that_keep_copies_of_a_session_s_lines(tmp_path: Path, env: dict[str, str]) -> None:
    """A fork (`--resume --fork-session`) begins with copies of its parent's lines: forgetting either
    says the other keeps them, unless both go."""
    parent, fork = "f887d421-be59-4f9c-a76b-13ae5f333be0", "f686e61b-034f-491d-82f8-e1a73360f0f2"
    # Cases written against one scripted model: their tool call ids repeat from session to session.
    folders = [copy_projects(FIXTURES / "claude-code-gen" / case, tmp_path) for case in ("d_resume", "c_permissions")]
    assert run_postrun("ingest", "--agent", "claude-code", *map(str, folders), env=env).returncode == 0
    alone = run_postrun("forget", parent[:8], env=env)
    assert alone.returncode == 0, alone.stderr
    assert [line for line in alone.stderr.splitlines() if line.startswith("note:")] == [
        f"note: copies of {parent}'s lines stay in {fork} (a fork, or its parent) unless forgotten"
    ]
    listed = json.loads(run_postrun("sessions", "--json", env=env).stdout)
    (other,) = [session["id"] for session in listed if session["id"] not in (parent, fork)]
    shares_call_ids = run_postrun("forget", other, env=env)
    assert shares_call_ids.returncode == 0, shares_call_ids.stderr
    assert "note:" not in shares_call_ids.stderr
    both = run_postrun("forget", fork, parent[:8], "--yes", env=env)  # forgotten together: no note
    assert both.returncode == 0, both.stderr
    assert "note:" not in both.stderr
    listed = run_postrun("sessions", env=env).stdout
    assert parent not in listed and fork not in listed


def test_claude_s_config_folder_is_read_whole_despite_a_stray_file_in_projects(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """README: `postrun ingest --agent claude-code ~/.claude` ingests "every project". A stray
    `.jsonl` right in `projects/` made `~/.claude` read as a projects root with one project,
    `projects`: the stray file failed alone and no session was ingested."""
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    (projects / "stray.jsonl").write_text("{}\n")
    result = run_postrun("ingest", "--agent", "claude-code", str(projects.parent), env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    assert f"warning: {projects / 'stray.jsonl'}: skipped (not a project folder)" in result.stderr


def test_another_agent_s_jsonl_is_refused_not_stored_as_an_empty_session(tmp_path: Path, env: dict[str, str]) -> None:
    """README (bad input is one line): a Codex rollout given with `--agent claude-code` was
    stored as a Claude Code session `rollout-…` of 0 steps; it is refused in one line, exit 1."""
    (rollout,) = (FIXTURES / "codex" / "nested_subagents" / "sessions").rglob("rollout-*-0000-*.jsonl")
    mistaken = tmp_path / "elsewhere" / rollout.name
    mistaken.parent.mkdir()
    shutil.copyfile(rollout, mistaken)
    result = run_postrun("ingest", "--agent", "claude-code", str(mistaken), env=env)
    assert (result.returncode, result.stdout) == (1, ""), result.stdout
    assert result.stderr == f"error: {mistaken}: not a Claude Code transcript (no line is a record)\n"
    assert json.loads(run_postrun("sessions", "--json", env=env).stdout) == []


def test_a_transcript_of_summaries_only_is_no_session(tmp_path: Path, env: dict[str, str]) -> None:
    """A file holding only the `summary` lines older Claude Code wrote (titles of other
    sessions: no `sessionId`, no prompt, no reply) was stored as an open session of 0 steps.
    It is not recorded, said once as a warning (exit 0); the other sessions are ingested."""
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    summaries = projects / NESTED_SLUG / "5e55a0e0-0000-4000-8000-000000000001.jsonl"
    summaries.write_text(
        '{"type":"summary","summary":"Fix the login bug","leafUuid":"0b1c2d3e-0000-4000-8000-000000000001"}\n'
        '{"type":"summary","summary":"Add the cache","leafUuid":"0b1c2d3e-0000-4000-8000-000000000002"}\n'
    )
    result = run_postrun("ingest", "--agent", "claude-code", str(projects), env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    assert f"warning: {summaries}: not recorded: no line of a session in this transcript (yet)" in result.stderr
    listed = json.loads(run_postrun("sessions", "--json", env=env).stdout)
    assert [session["id"] for session in listed] == [NESTED]


def test_an_old_layout_sub_agent_is_stored_in_its_session_never_as_one(tmp_path: Path, env: dict[str, str]) -> None:
    """claude-code.md §1: "Sub-agents are never sessions of their own." Claude Code before 2.1
    wrote a sub-agent's transcript as `agent-<id>.jsonl` right in the project folder; it was
    stored as a session `agent-<id>`. Its lines name its session, whose helper it now is."""
    projects = copy_projects(FIXTURES / "claude-code" / "subagents_nested", tmp_path)
    subagents = projects / NESTED_SLUG / NESTED / "subagents"
    moved = projects / NESTED_SLUG / "agent-aaaa1111.jsonl"
    (subagents / "agent-aaaa1111.jsonl").rename(moved)
    (subagents / "agent-aaaa1111.meta.json").unlink()
    result = run_postrun("ingest", "--agent", "claude-code", str(projects), env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    exported = json.loads(run_postrun("export", NESTED, env=env).stdout)
    assert "agent-aaaa1111" in {actor["id"] for actor in exported["actors"]}
    assert any(step["actor_id"] == "agent-aaaa1111" for step in exported["steps"])
    alone = run_postrun("ingest", "--agent", "claude-code", str(moved), env=env)
    assert alone.returncode == 0, alone.stderr
    assert f"note: {moved}: a sub-agent of session {NESTED}: ingesting that session" in alone.stderr
    listed = json.loads(run_postrun("sessions", "--json", env=env).stdout)
    assert [session["id"] for session in listed] == [NESTED]


def test_a_sub_agent_s_lines_in_the_main_transcript_are_stored_in_their_turn(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """README: a prompt (a `user` line, not injected) is a turn. Claude Code before the
    sub-agents' own files wrote a Task's sub-agent in the main transcript (`isSidechain: true`):
    its task prompt was stored as a second turn, holding the main agent's answer. One turn now."""
    sid = "51de0000-0000-4000-8000-000000000001"
    t = Transcript(sid, "/home/dev/work/side", version="1.0.30")
    t.prompt("Find the config", uuid="line-prompt")
    t.call("msg_1", "toolu_task", "Task", {"description": "Search", "prompt": "Look for config files"})
    resume_at, t.parent = t.parent, None
    t.prompt("Look for config files", uuid="line-side-prompt", isSidechain=True)
    t.text("msg_s1", "Found a.cfg", uuid="line-side-answer", isSidechain=True)
    t.parent = resume_at
    t.result("toolu_task", [{"type": "text", "text": "Found a.cfg"}], tool_use_result={"content": []})
    t.text("msg_2", "The config is a.cfg", uuid="line-answer")
    transcript = t.write(tmp_path / "projects" / "-home-dev-work-side" / f"{sid}.jsonl")
    result = run_postrun("ingest", "--agent", "claude-code", str(transcript), env=env)
    assert result.returncode == 0, result.stderr
    exported = json.loads(run_postrun("export", sid, env=env).stdout)
    assert [turn["step_ids"][-1] for turn in exported["turns"]] == ["line-answer"]
    roles = {step["id"]: step["payload"].get("role") for step in exported["steps"]}
    assert roles["line-side-prompt"] == "system"
