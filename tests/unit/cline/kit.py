"""Helpers for the Cline adapter tests: hand-made sessions and the fixture cases."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import orjson

from postrun.agents.cline import (
    MappingCache,
    SessionFiles,
    SessionLocation,
    approval_snapshot,
    list_sessions,
    map_session,
    read_session,
)
from postrun.agents.cline.approvals import VSCODE_DEFAULTS
from postrun.errors import SourceError
from postrun.records import MappedSession, SourceFile
from tests.support import expect_facts, v12check

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
CASES = sorted(
    [path for path in (FIXTURES / "cline").iterdir() if path.is_dir()]
    + [path for path in (FIXTURES / "cline-real").iterdir() if path.is_dir()]
)
MAX_BYTES = 64 * 2**20
SESSION_ID = "1790000000000_tests"
ROOT = Path("/data/sessions")
STARTED = "2026-09-21T14:00:00.000Z"
T0 = 1790000000000  # epoch ms, 2026-09-21T14:13:20Z

ALL_AUTO = {"kind": "vscode", "actions": {key: True for key in VSCODE_DEFAULTS}, "settings": "read"}
ALL_ASKED = {"kind": "vscode", "actions": {key: False for key in VSCODE_DEFAULTS}, "settings": "read"}


def envelope(mapped: MappedSession) -> dict[str, Any]:
    return {
        "schema_version": "1.2",
        "session": mapped.session,
        "segments": mapped.segments,
        "actors": mapped.actors,
        "turns": mapped.turns,
        "steps": [row.record for row in mapped.steps],
    }


def assert_valid(mapped: MappedSession) -> None:
    """Both checkers agree the records are valid v1.2 (our schema and the independent one)."""
    mapped.validate()
    problems = v12check.problems(json.loads(orjson.dumps(envelope(mapped))))
    assert problems == [], problems


def files_for(
    messages: Any,
    manifest: dict[str, Any] | None = None,
    *,
    document: dict[str, Any] | None = None,
    mtime_ns: int = 1_790_000_000_000_000_000,
) -> SessionFiles:
    """In-memory files of a session (the mapping is pure: no disk needed)."""
    return files_with_document(
        {"version": 1, "agent": "lead", "messages": messages, **(document or {})}, manifest, mtime_ns
    )


def files_with_document(
    doc: Any, manifest: dict[str, Any] | None = None, mtime_ns: int = 1_790_000_000_000_000_000
) -> SessionFiles:
    location = SessionLocation.in_root(ROOT, SESSION_ID)
    fingerprints = [SourceFile(str(location.messages), 100, mtime_ns, 1)]
    if manifest is not None:
        fingerprints.append(SourceFile(str(location.manifest), 10, mtime_ns, 2))
    return SessionFiles(location, doc, manifest, tuple(fingerprints))


def default_manifest(**changes: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "session_id": SESSION_ID,
        "source": "vscode",
        "started_at": STARTED,
        "status": "running",
        "cwd": "/home/dev/app",
        "workspace_root": "/home/dev/app",
    }
    manifest.update(changes)
    return {key: value for key, value in manifest.items() if value is not None}


def mapped_session(
    messages: list[Any],
    *,
    manifest: dict[str, Any] | None = None,
    approvals: dict[str, Any] | None = None,
    document: dict[str, Any] | None = None,
) -> MappedSession:
    files = files_for(messages, default_manifest() if manifest is None else manifest, document=document)
    mapped, _cache = map_session(files, ALL_AUTO if approvals is None else approvals)
    assert_valid(mapped)
    return mapped


def steps_by_id(mapped: MappedSession) -> dict[str, dict[str, Any]]:
    return {row.id: row.record for row in mapped.steps}


def prompt(message_id: str, text: str, *, mode: str | None = "act", ts: int | None = T0) -> dict[str, Any]:
    wrapped = f'<user_input mode="{mode}">{text}</user_input>' if mode is not None else text
    return message(message_id, "user", [{"type": "text", "text": wrapped}], ts=ts)


def message(message_id: str | None, role: str, content: Any, *, ts: int | None = T0, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"role": role, "content": content, **extra}
    if message_id is not None:
        raw["id"] = message_id
    if ts is not None:
        raw["ts"] = ts
    return raw


def call(call_id: str, name: str, tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def answer(call_id: str, content: Any, *, name: str = "", is_error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "name": name, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def one_call(
    name: str,
    tool_input: Any,
    content: Any = None,
    *,
    is_error: bool | None = None,
    answered: bool = True,
    **options: Any,
) -> MappedSession:
    """A prompt, one assistant call and (unless ``answered`` is False) its result."""
    messages = [
        prompt("u1", "go"),
        message("a1", "assistant", [call("c1", name, tool_input)], ts=T0 + 1000),
    ]
    if answered:
        messages.append(message("r1", "user", [answer("c1", content, name=name, is_error=is_error)], ts=T0 + 2000))
    return mapped_session(messages, **options)


def item(query: str, result: str, *, success: bool = True, error: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"query": query, "result": result, "success": success}
    if error is not None:
        found["error"] = error
    return found


def map_case_dir(data_dir: Path) -> tuple[dict[str, MappedSession], list[str]]:
    """Map every session of a Cline data dir the way an ingest would; errors go to the log."""
    mapped: dict[str, MappedSession] = {}
    log: list[str] = []
    listing = list_sessions(data_dir / "sessions")
    log.extend(f"skipped {skipped.path}: {skipped.reason}" for skipped in listing.skipped)
    for location in listing.sessions:
        try:
            files = read_session(location, max_bytes=MAX_BYTES)
            approvals = approval_snapshot(location.data_dir, files.client_source, max_bytes=MAX_BYTES)
            mapped[location.session_id], _ = map_session(files, approvals)
            log.extend(str(problem) for problem in mapped[location.session_id].unread)
        except SourceError as exc:
            log.append(str(exc))
    return mapped, log


def check_expect(case: Path, mapped: dict[str, MappedSession], log: list[str], out: Path) -> str:
    """Run the independent expect.json checker; returns its report ('' when every fact holds)."""
    out.mkdir(parents=True, exist_ok=True)
    for session_id, session in mapped.items():
        (out / f"{session_id}.json").write_bytes(orjson.dumps(envelope(session)))
    (out / "log.txt").write_text("\n".join(log))
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        failed = expect_facts.main(str(case), str(out))
    return report.getvalue() if failed else ""


def same_mapping(left: MappedSession, right: MappedSession) -> bool:
    return (
        left.session == right.session
        and left.segments == right.segments
        and left.actors == right.actors
        and left.turns == right.turns
        and [row.blob for row in left.steps] == [row.blob for row in right.steps]
        and left.extras == right.extras
        and left.approvals == right.approvals
        and left.source_files == right.source_files
        and left.helper_metrics == right.helper_metrics
        and [str(problem) for problem in left.unread] == [str(problem) for problem in right.unread]
        and left.read_texts == right.read_texts
    )


def remap(files: SessionFiles, approvals: dict[str, Any], cache: MappingCache | None) -> MappingCache:
    """Map with and without the cache, assert both agree and are valid; return the new cache."""
    cached, next_cache = map_session(files, approvals, cache)
    fresh, _ = map_session(files, approvals)
    assert same_mapping(cached, fresh)
    assert_valid(fresh)
    return next_cache
