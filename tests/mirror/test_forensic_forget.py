"""The forensic test of `postrun forget`, for every agent Postrun records.

A session is stored, rewritten by its agent (a prompt with a marker added) and ingested and
pushed to the team mirror several times, then forgotten and the forget pushed. Then nothing of
it is anywhere: not in `postrun.db`, `-wal` or `-shm`, not in a backup made after the forget,
plain or inside any zstd frame (tests/support/forensic.py), and not in any table of the real
PostgreSQL mirror. Its marker, the pieces of its stored records and raw copies are looked for.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest

from postrun.agents.registry import KINDS
from tests.conftest import FIXTURES, run_postrun
from tests.mirror.conftest import Mirror
from tests.support import forensic

MARKER = "Qzforensicmarker41c7"
OTHER_TEXT = "words of a longer prompt that a rewrite adds "


@dataclass(frozen=True)
class Case:
    """An agent's session as a test writes it: copied from a fixture, then one prompt more per round."""

    copy: Callable[[Path], Path]  # into a folder; the session's file or folder to ingest
    add_prompt: Callable[[Path, str, int], None]  # the session's file or folder, the text, the round
    folder_setting: str  # the environment variable naming the agent's folder


def _prompt_text(round_: int) -> str:
    return f"{MARKER} round {round_} " + OTHER_TEXT * 30 * (round_ + 1)


def _cline_copy(folder: Path) -> Path:
    shutil.copytree(FIXTURES / "cline" / "review_flags" / "data", folder / "data")
    return folder / "data" / "sessions" / "1790000100000_review"


def _cline_add(session: Path, text: str, round_: int) -> None:
    messages = session / f"{session.name}.messages.json"
    document = json.loads(messages.read_text())
    content = [{"type": "text", "text": text}]
    document["messages"].append({"id": f"msg_r{round_}", "role": "user", "content": content, "ts": 1790000200000})
    messages.write_text(json.dumps(document))  # Cline rewrites the whole file


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _append(path: Path, line: dict[str, Any]) -> None:
    with path.open("a") as handle:  # JSONL agents append
        handle.write(json.dumps(line, separators=(",", ":")) + "\n")


def _claude_copy(folder: Path) -> Path:
    projects = FIXTURES / "claude-code-real" / "b_bash" / "claude" / "projects"
    shutil.copytree(projects, folder / "projects")
    return next((folder / "projects").glob("*/*.jsonl"))


def _claude_add(transcript: Path, text: str, round_: int) -> None:
    lines = _lines(transcript)
    prompt = next(line for line in lines if line.get("type") == "user" and isinstance(line["message"]["content"], str))
    last = next(line for line in reversed(lines) if "uuid" in line)
    added = dict(prompt, uuid=str(uuid.uuid4()), parentUuid=last["uuid"], message={"role": "user", "content": text})
    added["timestamp"] = last["timestamp"]
    _append(transcript, added)


def _codex_copy(folder: Path) -> Path:
    shutil.copytree(FIXTURES / "codex" / "reasoning_and_tools" / "sessions", folder / "sessions")
    return next((folder / "sessions").rglob("rollout-*.jsonl"))


def _codex_add(rollout: Path, text: str, round_: int) -> None:
    """The first turn's prompt (its user message and the item that completes it) rewritten."""
    lines = _lines(rollout)
    prompt = next(
        line["payload"]["content"][0]["text"]
        for line in lines
        if line["type"] == "response_item" and line["payload"].get("role") == "user" and "id" in line["payload"]
    )
    rollout.write_text(rollout.read_text().replace(json.dumps(prompt)[1:-1], f"{prompt} {text}"))


CASES = {
    "cline": Case(_cline_copy, _cline_add, "POSTRUN_CLINE_DIR"),
    "claude-code": Case(_claude_copy, _claude_add, "POSTRUN_CLAUDE_DIR"),
    "codex": Case(_codex_copy, _codex_add, "POSTRUN_CODEX_DIR"),
}


def test_every_registered_agent_has_a_case() -> None:
    assert set(KINDS) <= set(CASES), "a new agent needs its forensic case here"


def mirror_tables(mirror: Mirror) -> str:
    """Every row of every table of the mirror database, as text."""
    with mirror.server.admin(mirror.database) as connection:
        tables = connection.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'"
        ).fetchall()
        assert tables
        return "\n".join(
            str(row[0])
            for schema, table in tables
            for row in connection.execute(f'SELECT t::text FROM "{schema}"."{table}" t')
        )


@pytest.mark.parametrize("kind", KINDS)
def test_a_forgotten_session_leaves_no_byte_anywhere(
    kind: str, tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    case = CASES[kind]
    env = dict(mirror_env)
    source = case.copy(tmp_path / "agent")
    env[case.folder_setting] = str(tmp_path / "agent")
    db = Path(env["POSTRUN_DB"])
    for round_ in range(4):
        case.add_prompt(source, _prompt_text(round_), round_)
        done = run_postrun("ingest", "--agent", kind, str(source), env=env)
        assert done.returncode == 0, done.stderr
        pushed = run_postrun("mirror", "push", env=env)
        assert pushed.returncode == 0, pushed.stderr
    with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as connection:
        (session_id,) = [str(row[0]) for row in connection.execute("SELECT id FROM sessions")]
    found = forensic.evidence(db, session_id, MARKER)
    assert found.pieces and MARKER.lower() in mirror_tables(mirror).lower()  # the scans see it while it is there
    assert [trace for path in forensic.store_files(db) for trace in forensic.traces(path, found)]

    done = run_postrun("forget", session_id, "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert run_postrun("mirror", "push", env=env).returncode == 0
    backup = tmp_path / "after-forget.db"
    assert run_postrun("backup", str(backup), env=env).returncode == 0

    traces = [trace for path in (*forensic.store_files(db), backup) for trace in forensic.traces(path, found)]
    assert traces == []
    held = mirror_tables(mirror).lower()
    assert MARKER.lower() not in held and session_id.lower() not in held


def test_a_forget_then_a_forced_ingest_before_the_push_leaves_no_earlier_version_in_the_mirror(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    """The forget reaches the mirror as a delete of all it holds of the session, even when the
    session is recorded again before the delete was pushed: none of its earlier versions stay."""
    env = dict(mirror_env)
    session = _cline_copy(tmp_path / "agent")
    messages = session / f"{session.name}.messages.json"
    original = messages.read_bytes()
    for round_ in range(3):  # one prompt rewritten: its earlier versions are history
        document = json.loads(original)
        content = [{"type": "text", "text": _prompt_text(round_)}]
        document["messages"].append({"id": "msg_r", "role": "user", "content": content, "ts": 1790000200000})
        messages.write_text(json.dumps(document))
        assert run_postrun("ingest", str(session), env=env).returncode == 0
        assert run_postrun("mirror", "push", env=env).returncode == 0
    assert MARKER.lower() in mirror_tables(mirror).lower()

    messages.write_bytes(original)  # the agent's file without the prompt
    assert run_postrun("forget", session.name, "--yes", env=env).returncode == 0
    forced = run_postrun("ingest", "--force", str(session), env=env)
    assert forced.returncode == 0, forced.stderr
    assert run_postrun("mirror", "push", env=env).returncode == 0
    held = mirror_tables(mirror)
    assert session.name in held  # recorded again, as it is now
    assert [line[:200] for line in held.splitlines() if MARKER.lower() in line.lower()] == []


def test_a_session_that_turns_out_excluded_leaves_no_copy_in_the_mirror(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    """Stored and pushed while its workspace was unknown (its manifest came later), then removed."""
    env = dict(mirror_env, POSTRUN_EXCLUDE="/home/dev/shop")
    session = _cline_copy(tmp_path / "agent")
    manifest = session / f"{session.name}.json"
    aside = tmp_path / "manifest.json"
    shutil.move(manifest, aside)
    assert run_postrun("ingest", str(session), env=env).returncode == 0
    assert run_postrun("mirror", "push", env=env).returncode == 0
    assert session.name in mirror_tables(mirror)

    shutil.move(aside, manifest)
    done = run_postrun("ingest", str(session), env=env)
    assert "removed what was stored of it before its workspace was known" in done.stderr, done.stderr
    assert run_postrun("mirror", "push", env=env).returncode == 0
    assert session.name not in mirror_tables(mirror)
