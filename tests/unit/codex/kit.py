"""Helpers for the Codex adapter tests: rollouts written line by line, and the fixture cases."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.codex import MappingCache, SessionFiles, group_sessions, list_rollouts, map_session
from postrun.agents.codex.reading import read_metas, read_session
from postrun.errors import SourceError
from postrun.records import MappedSession
from tests.unit.cline.kit import assert_valid, check_expect, envelope, same_mapping

__all__ = ["assert_valid", "check_expect", "envelope", "same_mapping"]

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
# Real rollouts: the shared ones, and the ones tests/fixtures/codex-gen/make.py drove the real CLI to write.
REAL_CASES = sorted(path for path in (FIXTURES / "codex-real").iterdir() if path.is_dir()) + sorted(
    path for path in (FIXTURES / "codex-gen").iterdir() if (path / "expect.json").exists()
)
HAND_CASES = sorted(path for path in (FIXTURES / "codex").iterdir() if path.is_dir())
MAX_BYTES = 512 * 2**20


def map_sessions_dir(sessions: Path) -> tuple[dict[str, MappedSession], list[str]]:
    """Map every session of a Codex sessions folder the way an ingest would; errors go to the log."""
    mapped: dict[str, MappedSession] = {}
    log: list[str] = []
    listing = list_rollouts(sessions)
    metas, problems = read_metas(listing.rollouts, max_bytes=MAX_BYTES)
    log.extend(str(problem) for problem in problems.values())
    for location in group_sessions(listing.rollouts, metas):
        try:
            files = read_session(location, max_bytes=MAX_BYTES)
            mapped[location.session_id], _ = map_session(files)
            log.extend(str(problem) for problem in mapped[location.session_id].unread)
        except SourceError as exc:
            log.append(str(exc))
    return mapped, log


def mapped_cleanly(sessions: Path, session_id: str) -> MappedSession:
    """Session ``session_id`` of a Codex sessions folder, mapped as an ingest would with nothing
    logged, and valid."""
    mapped, log = map_sessions_dir(sessions)
    assert log == []
    assert_valid(mapped[session_id])
    return mapped[session_id]


def remap(files: SessionFiles, full: SessionFiles, cache: MappingCache | None) -> tuple[MappedSession, MappingCache]:
    """Map ``files`` (read after ``cache``) with the cache and ``full`` (the same, read whole)
    without: both agree and are valid; returns the mapping and the new cache."""
    cached, next_cache = map_session(files, cache)
    fresh, _ = map_session(full)
    assert same_mapping(cached, fresh), "a mapping resumed from its cache differs from a fresh one"
    assert_valid(fresh)
    return cached, next_cache
