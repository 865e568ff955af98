"""Helpers for the Claude Code adapter tests: the fixture cases, mapped as an ingest maps them."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.claude_code import (
    MappingCache,
    SessionLocation,
    list_sessions,
    map_session,
    read_from,
    read_session,
)
from postrun.errors import SourceError
from postrun.records import MappedSession
from tests.unit.cline.kit import assert_valid, check_expect, envelope

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
REAL_CASES = sorted(path for path in (FIXTURES / "claude-code-real").iterdir() if path.is_dir())
MADE_CASES = sorted(path for path in (FIXTURES / "claude-code").iterdir() if path.is_dir())
# Made by the real CLI too, driven by tests/fixtures/claude-code-gen/make.py (read only here).
GEN_CASES = sorted(path for path in (FIXTURES / "claude-code-gen").iterdir() if (path / "expect.json").exists())
CASES = REAL_CASES + MADE_CASES + GEN_CASES
MAX_BYTES = 64 * 2**20

__all__ = ["assert_valid", "check_expect", "envelope"]


def map_location(location: SessionLocation, cache: MappingCache | None = None) -> tuple[MappedSession, MappingCache]:
    files = read_session(location, max_bytes=MAX_BYTES, since=read_from(cache))
    return map_session(files, cache)


def map_projects(projects: Path) -> tuple[dict[str, MappedSession], list[str]]:
    """Map every session of a projects root the way an ingest would; errors go to the log."""
    mapped: dict[str, MappedSession] = {}
    log: list[str] = []
    listing = list_sessions(projects)
    log.extend(f"skipped {skipped.path}: {skipped.reason}" for skipped in listing.skipped)
    for location in listing.sessions:
        try:
            mapped[location.session_id], _ = map_location(location)
        except SourceError as exc:
            log.append(str(exc))
            continue
        log.extend(str(problem) for problem in mapped[location.session_id].unread)
    return mapped, log


def same_mapping(left: MappedSession, right: MappedSession) -> bool:
    return (
        left.session == right.session
        and left.segments == right.segments
        and left.actors == right.actors
        and left.turns == right.turns
        and [row.blob for row in left.steps] == [row.blob for row in right.steps]
        and left.extras == right.extras
        and left.read_texts == right.read_texts
        and [str(problem) for problem in left.unread] == [str(problem) for problem in right.unread]
    )
