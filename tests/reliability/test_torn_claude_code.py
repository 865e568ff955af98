"""Suite 1 for Claude Code, torn writes: a transcript caught at any byte while a line is appended.

Claude Code appends to its transcripts a line at a time, so a reader can see a prefix of the
file that ends inside a line. For every real transcript (main and sub-agent), each line is
cut at its first and last bytes, in its middle and just before its newline (with ``--slow``:
every byte of each line up to 2 KB, and 192 bytes of each longer one), and each cut is
ingested through the store, both as the capture does (from the last ingest's mapping cache)
and afresh:

- nothing but ``ingested``/``updated``/``unchanged`` happens (never an error);
- what is stored is exactly what the complete lines before the cut give (the cut line is
  not mapped, the file is listed as incomplete);
- the completed file then stores exactly what a fresh ingest gives.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from postrun.agents.claude_code import MappingCache, SessionLocation, list_sessions
from postrun.errors import NotParseableYet
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.conftest import FIXTURES
from tests.reliability.kit import StoredRecords, differences, read_records, store_problems

MAX_BYTES = 512 * 2**20
# The real cases, and the generated ones whose later lines change earlier facts: a resume that
# repairs a killed invocation (a new segment, a call's result, a sub-agent's call closed).
GENERATED = ("i_killed_resumed", "j_killed_tool_resumed", "k_subagent_killed")
CASES = sorted(path for path in (FIXTURES / "claude-code-real").iterdir() if path.is_dir()) + [
    FIXTURES / "claude-code-gen" / name for name in GENERATED
]
Offsets = Callable[[bytes], Iterator[int]]


def line_cuts(data: bytes) -> Iterator[int]:
    """Inside each line: after its first byte, in its middle, before its last byte and its newline."""
    start = 0
    while start < len(data):
        end = data.index(b"\n", start)
        yield from sorted({start + 1, (start + end) // 2, end - 1, end} - {start})
        start = end + 1


def dense_cuts(data: bytes) -> Iterator[int]:
    """Every byte of each short line; of a long one, its first and last 64 bytes and 64 between."""
    start = 0
    while start < len(data):
        end = data.index(b"\n", start) + 1
        if end - start <= 2048:
            yield from range(start + 1, end)
        else:
            step = (end - start) // 64
            yield from sorted(
                {*range(start + 1, start + 65), *range(start + 65, end - 64, step), *range(end - 64, end)}
            )
        start = end


def _complete_part(data: bytes) -> bytes:
    """The complete lines of a cut file (what a reader must map of it)."""
    return data[: data.rfind(b"\n") + 1]


class Series:
    """One session's files being written, ingested after each cut as the capture does."""

    def __init__(self, case: Path, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.source = case / "claude" / "projects"
        self.root = tmp_path / "projects"
        (self.location,) = (location for location in list_sessions(self.source).sessions)
        assert isinstance(self.location, SessionLocation)
        self.location = SessionLocation(self.root, self.location.slug, self.location.session_id)
        shutil.copytree(self.source, self.root, ignore=shutil.ignore_patterns("*.jsonl"))
        # The main transcript first (a sub-agent is part of a session that exists).
        self.files = sorted((path.relative_to(self.source) for path in self.source.rglob("*.jsonl")), key=str)
        self.database = Database.open(tmp_path / "store" / "postrun.db")
        self.ingester = Ingester(self.database, max_bytes=MAX_BYTES)
        self.cache: MappingCache | None = None

    def write(self, relative: Path, data: bytes) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def ingest(self, *, cached: bool = True) -> str:
        outcome, cache = self.ingester.ingest(self.location, self.cache if cached else None, live=True)
        self.cache = cache
        return outcome.status

    def fresh(self) -> dict[str, StoredRecords]:
        """What a fresh ingest of the files as they are now gives, in a store of its own."""
        db = self.tmp_path / f"fresh-{len(list(self.tmp_path.glob('fresh-*')))}" / "postrun.db"
        with Database.open(db) as database:
            Ingester(database, max_bytes=MAX_BYTES).ingest(self.location)
        return read_records(db)

    def run(self, offsets: Offsets, *, check_every: int) -> None:
        """Each file grows cut by cut (the others complete before it, in order; the lead first)."""
        for number, relative in enumerate(self.files):
            complete = (self.source / relative).read_bytes()
            for count, offset in enumerate(offsets(complete)):
                self.write(relative, complete[:offset])
                try:
                    status = self.ingest(cached=count % 2 == 0)
                except NotParseableYet as exc:
                    # Only a new session's transcript before its first newline.
                    assert number == 0 and b"\n" not in complete[:offset], (relative, offset, exc)
                    continue
                assert status in ("ingested", "updated", "unchanged"), (relative, offset, status)
                if count % check_every == 0:
                    self._holds_only_complete_lines(relative, complete[:offset], number)
            self.write(relative, complete)
            assert self.ingest() in ("ingested", "updated", "unchanged")
        assert differences(read_records(self.database.path), self.fresh()) == []
        assert store_problems(self.database.path) == []

    def _holds_only_complete_lines(self, relative: Path, cut: bytes, number: int) -> None:
        stored = read_records(self.database.path)
        if not stored:
            return  # a cut before the main transcript's first line: no session yet
        target = self.root / relative
        target.write_bytes(_complete_part(cut))
        expected = self.fresh()
        target.write_bytes(cut)
        assert differences(stored, expected) == [], (relative, len(cut), number)

    def close(self) -> None:
        self.database.close()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_line_cut_anywhere_stores_only_the_lines_before_it(case: Path, tmp_path: Path) -> None:
    series = Series(case, tmp_path)
    try:
        series.run(line_cuts, check_every=7)
    finally:
        series.close()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_transcript_cut_densely(case: Path, tmp_path: Path) -> None:
    series = Series(case, tmp_path)
    try:
        series.run(dense_cuts, check_every=997)
    finally:
        series.close()
