"""Helpers for the Codex adapter tests: rollouts written line by line, and the fixture cases."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import orjson

from postrun.agents.codex import MappingCache, SessionFiles, group_sessions, list_rollouts, map_session
from postrun.agents.codex.reading import read_metas, read_session
from postrun.errors import SourceError
from postrun.records import MappedSession
from tests.support import expect_facts, v12check

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
REAL_CASES = sorted(path for path in (FIXTURES / "codex-real").iterdir() if path.is_dir())
HAND_CASES = sorted(path for path in (FIXTURES / "codex").iterdir() if path.is_dir())
MAX_BYTES = 512 * 2**20


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


def map_sessions_dir(sessions: Path) -> tuple[dict[str, MappedSession], list[str]]:
    """Map every session of a Codex sessions folder the way an ingest would; errors go to the log."""
    mapped: dict[str, MappedSession] = {}
    log: list[str] = []
    listing = list_rollouts(sessions)
    metas, problems = read_metas(listing.rollouts, max_bytes=MAX_BYTES)
    log.extend(str(problem) for problem in problems)
    for location in group_sessions(listing.rollouts, metas):
        try:
            files = read_session(location, max_bytes=MAX_BYTES)
            mapped[location.session_id], _ = map_session(files)
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
        and left.source_files == right.source_files
        and left.helper_metrics == right.helper_metrics
        and [str(problem) for problem in left.unread] == [str(problem) for problem in right.unread]
    )


def remap(files: SessionFiles, full: SessionFiles, cache: MappingCache | None) -> tuple[MappedSession, MappingCache]:
    """Map ``files`` (read after ``cache``) with the cache and ``full`` (the same, read whole)
    without: both agree and are valid; returns the mapping and the new cache."""
    cached, next_cache = map_session(files, cache)
    fresh, _ = map_session(full)
    assert same_mapping(cached, fresh), "a mapping resumed from its cache differs from a fresh one"
    assert_valid(fresh)
    return cached, next_cache
