"""Where sessions are found: the projects folder, every target form, events, what is skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from postrun.agents.claude_code import list_sessions, location_for_event, projects_root, resolve_targets
from postrun.agents.claude_code.strays import CHUNK_BYTES, named_session, session_named
from postrun.errors import NotFound, UsageError
from tests.unit.claude_code.kit import FIXTURES, map_location

NESTED = FIXTURES / "claude-code" / "subagents_nested" / "claude" / "projects"
KILLED = FIXTURES / "claude-code" / "killed" / "claude" / "projects"
SID = "c0ffee00-0000-4000-8000-000000000006"
SLUG = "-home-dev-work-nested"


def test_the_projects_folder_follows_claude_config_dir_else_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert projects_root({"HOME": str(home)}, base=tmp_path) == (home / ".claude" / "projects", None)
    found = projects_root({"HOME": str(home), "CLAUDE_CONFIG_DIR": "~/alt-claude"}, base=tmp_path)
    assert found == (home / "alt-claude" / "projects", "CLAUDE_CONFIG_DIR")
    relative = projects_root({"HOME": str(home), "CLAUDE_CONFIG_DIR": "conf"}, base=tmp_path)
    assert relative == (tmp_path / "conf" / "projects", "CLAUDE_CONFIG_DIR")
    blank = projects_root({"HOME": str(home), "CLAUDE_CONFIG_DIR": "  "}, base=tmp_path)
    assert blank == (home / ".claude" / "projects", None)


def test_a_listing_has_the_sessions_and_warns_about_junk_only() -> None:
    listing = list_sessions(KILLED)
    assert [location.session_id for location in listing.sessions] == [
        "c0ffee00-0000-4000-8000-000000000004",
        "c0ffee00-0000-4000-8000-000000000005",
    ]
    assert {skipped.path.name: skipped.warn for skipped in listing.skipped} == {
        "bad name.jsonl": True,
        "stray.jsonl": True,
    }


def test_sub_agents_are_never_sessions_of_their_own() -> None:
    assert [location.session_id for location in list_sessions(NESTED).sessions] == [SID]


@pytest.mark.parametrize(
    "target",
    [
        f"{SLUG}/{SID}.jsonl",
        f"{SLUG}/{SID}",
        f"{SLUG}/{SID}/subagents",
        SLUG,
        ".",
    ],
)
def test_every_target_form_names_the_session(target: str, tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(NESTED, projects)
    listing = resolve_targets([projects / target], tmp_path / "elsewhere")
    assert [location.session_id for location in listing.sessions] == [SID]
    assert listing.failures == ()
    assert listing.sessions[0].projects_root == projects
    assert listing.sessions[0].slug == SLUG


def test_a_session_id_is_looked_up_in_every_project_and_a_config_folder_is_a_root(tmp_path: Path) -> None:
    shutil.copytree(NESTED, tmp_path / "claude" / "projects")
    by_id = resolve_targets([SID], tmp_path / "claude" / "projects")
    assert [location.transcript for location in by_id.sessions] == [
        tmp_path / "claude" / "projects" / SLUG / f"{SID}.jsonl"
    ]
    config = resolve_targets([tmp_path / "claude"], tmp_path / "elsewhere")
    assert [location.session_id for location in config.sessions] == [SID]


def test_a_sub_agent_s_file_names_its_parent_and_says_so(tmp_path: Path) -> None:
    shutil.copytree(NESTED, tmp_path / "projects")
    path = tmp_path / "projects" / SLUG / SID / "subagents" / "agent-bbbb2222.jsonl"
    listing = resolve_targets([path], tmp_path)
    assert [location.session_id for location in listing.sessions] == [SID]
    assert listing.notes == (f"{path}: a sub-agent of session {SID}: ingesting that session",)


def test_targets_that_name_nothing_fail_alone(tmp_path: Path) -> None:
    shutil.copytree(NESTED, tmp_path / "projects")
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    listing = resolve_targets(
        ["no-such-session", str(tmp_path / "missing" / "x.jsonl"), "bad name!", notes, SID], tmp_path / "projects"
    )
    assert [location.session_id for location in listing.sessions] == [SID]
    kinds = [type(failure) for failure in listing.failures]
    assert kinds == [NotFound, NotFound, UsageError, UsageError]


def test_events_map_to_their_session() -> None:
    root = NESTED
    assert location_for_event(root, root / SLUG / f"{SID}.jsonl") is not None
    subagent = location_for_event(root, root / SLUG / SID / "subagents" / "agent-aaaa1111.jsonl")
    assert subagent is not None and subagent.session_id == SID
    assert location_for_event(root, root / SLUG / SID / "subagents" / "agent-x.meta.json.tmp.123") is None
    assert location_for_event(root, root / SLUG / "memory" / "notes.md") is None
    assert location_for_event(root, root / SLUG / ".hidden.jsonl") is None
    assert location_for_event(root, root / "stray.jsonl") is None
    assert location_for_event(root, root.parent / "elsewhere.jsonl") is None


def _old_layout(tmp_path: Path) -> tuple[Path, Path]:
    """The nested case with one sub-agent moved where Claude Code before 2.1 wrote it: right in
    the project folder, with no meta.json."""
    projects = tmp_path / "projects"
    shutil.copytree(NESTED, projects)
    subagents = projects / SLUG / SID / "subagents"
    moved = projects / SLUG / "agent-aaaa1111.jsonl"
    (subagents / "agent-aaaa1111.jsonl").rename(moved)
    (subagents / "agent-aaaa1111.meta.json").unlink()
    return projects, moved


def test_the_session_an_old_sub_agent_transcript_names_is_read_from_its_lines() -> None:
    line = b'{"type":"user","isSidechain":true,"agentId":"aaaa1111","sessionId":"' + SID.encode() + b'"}\n'
    assert session_named(b'{"type":"summary","summary":"x"}\n' + line) == SID
    assert session_named(line[:-10]) is None  # the line is not complete yet
    assert session_named(b"") is None


def test_a_sub_agent_transcript_whose_first_line_is_long_still_names_its_session(tmp_path: Path) -> None:
    # A sub-agent's first line is its prompt, which may be long: read until a line is complete.
    prompt = "x" * (3 * CHUNK_BYTES + 17)
    first = {"type": "user", "isSidechain": True, "sessionId": SID, "message": {"role": "user", "content": prompt}}
    transcript = tmp_path / "agent-aaaa1111.jsonl"
    transcript.write_bytes(orjson.dumps(first) + b"\n")
    assert named_session(transcript) == SID
    transcript.write_bytes(orjson.dumps(first))  # its first line not complete yet
    assert named_session(transcript) is None


def test_an_old_layout_sub_agent_is_a_helper_of_the_session_it_names_never_a_session(tmp_path: Path) -> None:
    # claude-code.md §1: "Sub-agents are never sessions of their own."
    projects, moved = _old_layout(tmp_path)
    listing = list_sessions(projects)
    assert [location.session_id for location in listing.sessions] == [SID]
    assert [(skipped.path, skipped.warn) for skipped in listing.skipped] == [(moved, False)]
    (location,) = listing.sessions
    mapped, _ = map_location(location)
    helpers = {actor["id"] for actor in mapped.actors if actor["type"] == "subagent"}
    assert "agent-aaaa1111" in helpers
    assert any(row.record["actor_id"] == "agent-aaaa1111" for row in mapped.steps)
    owner = location_for_event(projects, moved)
    assert owner is not None and owner.session_id == SID
    given = resolve_targets([str(moved)], projects)
    assert [found.session_id for found in given.sessions] == [SID]
    assert given.notes == (f"{moved}: a sub-agent of session {SID}: ingesting that session",)
    orphan = projects / SLUG / "agent-bbbb2222.jsonl"
    orphan.write_text('{"type":"user","sessionId":"c0ffee00-0000-4000-8000-0000000000ff"}\n')
    assert location_for_event(projects, orphan) is None
    assert [type(failure) for failure in resolve_targets([str(orphan)], projects).failures] == [NotFound]
