"""The real `postrun` executable over Codex's rollouts: every target form, the golden facts
through ingest and export, one listing and search across agents, the vault, reingest, forget."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_postrun
from tests.support.cli_cases import facts_through_cli

CASES = sorted(
    [path for path in (FIXTURES / "codex-real").iterdir() if (path / "expect.json").exists()]
    + [path for path in (FIXTURES / "codex-gen").iterdir() if (path / "expect.json").exists()]
    + [path for path in (FIXTURES / "codex").iterdir() if (path / "expect.json").exists()]
)
NESTED = "01a2330d-0000-7000-8000-00000000000a"
CHILD = "01a2330d-1111-7000-8000-000000000001"
GRANDCHILD = "01a2330d-1111-7000-8000-000000000002"
DAY = "2026/12/01"


def copy_sessions(case: Path, tmp_path: Path) -> Path:
    """A writable copy of a case's Codex home (its sessions folder, and the archive when it has one)."""
    home = tmp_path / "codex" / case.name
    for name in ("sessions", "archived_sessions"):
        if (case / name).is_dir():
            shutil.copytree(case / name, home / name)
    (home / "sessions").mkdir(parents=True, exist_ok=True)
    return home / "sessions"


def _ingested(stdout: str) -> list[str]:
    return [line.split()[3].rstrip(":") for line in stdout.splitlines() if line.startswith("ingested ")]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_facts_hold_through_ingest_and_export(case: Path, tmp_path: Path, env: dict[str, str]) -> None:
    report = facts_through_cli(case, copy_sessions(case, tmp_path), "codex", env, tmp_path / "out")
    assert report == "", report


def _rollout(sessions: Path, thread_id: str) -> Path:
    (found,) = sessions.rglob(f"rollout-*-{thread_id}.jsonl")
    return found


@pytest.mark.parametrize("target", ["id", "rollout", "day", "sessions", "child", "grandchild-id"])
def test_every_target_form(target: str, tmp_path: Path, env: dict[str, str]) -> None:
    sessions = copy_sessions(FIXTURES / "codex" / "nested_subagents", tmp_path)
    env["POSTRUN_CODEX_DIR"] = str(sessions)
    argument = {
        "id": NESTED,
        "rollout": str(_rollout(sessions, NESTED)),
        "day": str(sessions / DAY),
        "sessions": str(sessions),
        "child": str(_rollout(sessions, CHILD)),
        "grandchild-id": GRANDCHILD,
    }[target]
    result = run_postrun("ingest", "--agent", "codex", argument, env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    assert result.stdout.startswith(f"ingested codex session {NESTED}: 12 steps, 1 turn, 1 segment -> ")
    if target in ("child", "grandchild-id"):
        assert f"a sub-agent rollout of session {NESTED}: ingesting that session" in result.stderr


def test_a_thread_id_is_found_through_codex_home(tmp_path: Path, env: dict[str, str]) -> None:
    home = copy_sessions(FIXTURES / "codex" / "nested_subagents", tmp_path).parent
    env["CODEX_HOME"] = str(home)
    result = run_postrun("ingest", "--agent", "codex", NESTED, env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == [NESTED]
    shown = run_postrun("config", "show", env=env)
    assert "codex_dir = (not set)  (default)" in shown.stdout.splitlines()


def test_targets_that_name_nothing_fail_alone(tmp_path: Path, env: dict[str, str]) -> None:
    sessions = copy_sessions(FIXTURES / "codex" / "nested_subagents", tmp_path)
    env["POSTRUN_CODEX_DIR"] = str(sessions)
    missing = "01a2330d-0000-7000-8000-0000000000ff"
    result = run_postrun("ingest", "--agent", "codex", missing, NESTED, "not-an-id", env=env)
    assert result.returncode == 2, result.stderr  # "not-an-id" names no kind of target: a usage error
    assert _ingested(result.stdout) == [NESTED]
    assert f"error: {missing}: no rollout of that thread in the sessions folder" in result.stderr
    assert "error: not-an-id: not a thread id, a rollout file, a day folder or a sessions folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_child_alone_waits_for_its_parent(tmp_path: Path, env: dict[str, str]) -> None:
    sessions = copy_sessions(FIXTURES / "codex" / "child_before_parent", tmp_path)
    result = run_postrun("ingest", "--agent", "codex", str(sessions), env=env)
    assert result.returncode == 0, result.stderr
    assert _ingested(result.stdout) == []
    assert "whose own rollout is not there yet" in result.stderr


def test_three_agents_in_one_listing_and_search(tmp_path: Path, env: dict[str, str]) -> None:
    cline = tmp_path / "cline"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", cline)
    assert run_postrun("ingest", "--agent", "cline", str(cline / "sessions"), env=env).returncode == 0
    sessions = copy_sessions(FIXTURES / "codex-real" / "a_commands", tmp_path)
    assert run_postrun("ingest", "--agent", "codex", str(sessions), env=env).returncode == 0
    listed = run_postrun("sessions", "--json", env=env)
    assert sorted(session["agent"] for session in json.loads(listed.stdout)) == ["cline", "codex"]
    only = run_postrun("sessions", "--agent", "codex", env=env)
    assert [line.split()[2] for line in only.stdout.splitlines()] == ["codex"]
    found = run_postrun("search", "something broke", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert {hit["session_id"] for hit in json.loads(found.stdout)} == {"01a2330d-2877-74e1-85dd-6d88f53166fa"}
    flagged = run_postrun("search", "--flag", "failed", env=env)
    assert "call_2_1" in {line.split()[2] for line in flagged.stdout.splitlines()}
    shown = run_postrun("show", "01a2330d-2877-74e1-85dd-6d88f53166fa", env=env)
    assert "echo 'partial output'; echo 'something broke' >&2; exit 3" in shown.stdout  # the unwrapped command


def test_the_vault_gives_back_every_rollout_after_codex_deletes_them(tmp_path: Path, env: dict[str, str]) -> None:
    sessions = copy_sessions(FIXTURES / "codex-real" / "d_subagent", tmp_path)
    assert run_postrun("ingest", "--agent", "codex", str(sessions), env=env).returncode == 0
    before = {path.relative_to(sessions.parent): path.read_bytes() for path in sessions.rglob("*.jsonl")}
    shutil.rmtree(sessions)
    back = tmp_path / "back"
    session_id = "01a2330d-8486-7383-9b2b-63e51f475249"
    restored = run_postrun("raw", session_id, "--to", str(back), env=env)
    assert restored.returncode == 0, restored.stderr
    assert {path.relative_to(back): path.read_bytes() for path in back.rglob("*") if path.is_file()} == before
    assert run_postrun("show", session_id, env=env).returncode == 0  # the session stays in the store


def test_a_compressed_rollout_is_reingested_from_its_copy(tmp_path: Path, env: dict[str, str]) -> None:
    """README (Raw copies): reingest "works when Cline's files are gone", for a `.jsonl.zst`
    kept as its compressed bytes too (it once failed with an internal MemoryError)."""
    sessions = copy_sessions(FIXTURES / "codex" / "compressed_rollout", tmp_path)
    assert run_postrun("ingest", "--agent", "codex", str(sessions), env=env).returncode == 0
    (session_id,) = [row["id"] for row in json.loads(run_postrun("sessions", "--json", env=env).stdout)]
    before = run_postrun("export", session_id, "--format", "json", env=env).stdout
    shutil.rmtree(sessions)
    again = run_postrun("reingest", "--all", env=env)
    assert (again.returncode, again.stderr) == (0, ""), again.stderr
    assert "1 session from raw copies: 0 changed, 1 unchanged" in again.stdout
    assert run_postrun("export", session_id, "--format", "json", env=env).stdout == before


def test_reingest_forget_and_exclude_work_for_codex_sessions(tmp_path: Path, env: dict[str, str]) -> None:
    sessions = copy_sessions(FIXTURES / "codex" / "nested_subagents", tmp_path)
    assert run_postrun("ingest", "--agent", "codex", str(sessions), env=env).returncode == 0
    before = run_postrun("export", NESTED, "--format", "json", env=env).stdout
    shutil.rmtree(sessions)  # the files are gone: the vault's copies are what is left
    again = run_postrun("reingest", NESTED, env=env)
    assert again.returncode == 0, again.stderr
    assert run_postrun("export", NESTED, "--format", "json", env=env).stdout == before
    forgotten = run_postrun("forget", NESTED, "--yes", env=env)
    assert forgotten.returncode == 0, forgotten.stderr
    gone = run_postrun("export", NESTED, "--format", "json", env=env)
    assert (gone.returncode, gone.stderr.count("\n")) == (1, 1), gone.stderr
    assert f"no session {NESTED} in " in gone.stderr, gone.stderr
    sessions = copy_sessions(FIXTURES / "codex" / "nested_subagents", tmp_path / "again")
    refused = run_postrun("ingest", "--agent", "codex", str(sessions), env=env)
    assert "forgotten" in refused.stderr and _ingested(refused.stdout) == []
    excluded = run_postrun(
        "ingest", "--agent", "codex", "--force", str(sessions), env=env | {"POSTRUN_EXCLUDE": "/home/dev/work/*"}
    )
    assert _ingested(excluded.stdout) == []
    assert "not recorded: workspace /home/dev/work/app matches exclude" in excluded.stderr


def _raw_names(env: dict[str, str]) -> dict[str, list[list[str]]]:
    listed = json.loads(run_postrun("sessions", "--json", env=env).stdout)
    return {row["id"]: [[f["name"] for f in version["files"]] for version in row["raw_versions"]] for row in listed}


def test_every_folder_form_keeps_one_raw_version_named_as_in_codex_home(tmp_path: Path, env: dict[str, str]) -> None:
    """README (Codex): the vault copies every rollout "under its name in Codex's folder". It was
    named after whichever folder `ingest` was given (`~/.codex` gave `.codex/sessions/…` and read
    the archive as a sessions folder, a year folder `2026/12/…`), so each form of target made a
    new raw version of unchanged rollouts, and `raw` laid them out wrong."""
    sessions = copy_sessions(FIXTURES / "codex" / "nested_subagents", tmp_path)
    home = sessions.parent
    shutil.copytree(FIXTURES / "codex" / "archived_rollout" / "archived_sessions", home / "archived_sessions")
    for target in (home, sessions, sessions / "2026", sessions / "2026/12", sessions / DAY, home / "archived_sessions"):
        result = run_postrun("ingest", "--agent", "codex", str(target), env=env)
        assert result.returncode == 0, result.stderr
    archived = "01a2330d-0000-7000-8000-00000000000c"
    assert _raw_names(env) == {
        NESTED: [sorted(f"sessions/{path.relative_to(sessions).as_posix()}" for path in sessions.rglob("*.jsonl"))],
        archived: [[f"archived_sessions/{next(home.glob('archived_sessions/*.jsonl')).name}"]],
    }


def test_what_raw_writes_ingest_takes_back_as_it_is(tmp_path: Path, env: dict[str, str]) -> None:
    """README (Raw copies): `postrun ingest` takes what `raw` wrote "as it is": for Codex a
    folder laid out as Codex's home, its archive included. Its rollouts were named after that
    folder, so a second `raw` was refused as "inside the agent's data folder" beside the first."""
    sessions = copy_sessions(FIXTURES / "codex" / "archived_rollout", tmp_path)
    assert run_postrun("ingest", "--agent", "codex", str(sessions), env=env).returncode == 0
    archived = "01a2330d-0000-7000-8000-00000000000c"
    first, second = tmp_path / "out" / "first", tmp_path / "out" / "second"
    assert run_postrun("raw", archived, "--to", str(first), env=env).returncode == 0
    other = env | {"POSTRUN_DB": str(tmp_path / "other.db")}
    taken = run_postrun("ingest", "--agent", "codex", str(first), env=other)
    assert (taken.returncode, taken.stderr) == (0, ""), taken.stderr
    again = run_postrun("raw", archived, "--to", str(second), env=other)
    assert again.returncode == 0, again.stderr
    assert [p.relative_to(second) for p in second.rglob("*") if p.is_file()] == [
        p.relative_to(first) for p in first.rglob("*") if p.is_file()
    ]
    assert _raw_names(other)[archived] == _raw_names(env)[archived]


def test_a_rollout_with_items_but_no_version_is_read_from_its_items(tmp_path: Path, env: dict[str, str]) -> None:
    # codex.md §5.1: history lines are steps only in a rollout with no item anywhere. One whose
    # session_meta lacks cli_version (or names an old one) is stored as its items say: no
    # environment context as a message, the prompt once.
    stored = {}
    for name, version in (("release", "0.171.0"), ("none", None), ("old", "0.100.0")):
        sessions = copy_sessions(FIXTURES / "codex-real" / "a_commands", tmp_path / name)
        rollout = next(sessions.rglob("rollout-*.jsonl"))
        lines = rollout.read_text().splitlines()
        meta = json.loads(lines[0])
        meta["payload"].pop("cli_version")
        if version is not None:
            meta["payload"]["cli_version"] = version
        rollout.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
        env["POSTRUN_DB"] = str(tmp_path / name / "postrun.db")
        result = run_postrun("ingest", "--agent", "codex", str(sessions), env=env)
        assert result.returncode == 0, result.stderr
        session_id = _ingested(result.stdout)[0]
        exported = json.loads(run_postrun("export", session_id, env=env).stdout)
        stored[name] = (
            [(step["id"], step["type"], step["turn_id"], step["payload"]) for step in exported["steps"]],
            [(turn["id"], turn.get("prompt_id"), turn["step_ids"]) for turn in exported["turns"]],
        )
    assert stored["none"] == stored["release"]
    assert stored["old"] == stored["release"]
