"""Suite 1 for Codex, torn writes: a rollout caught at any byte while a line is appended.

Codex appends to its rollouts a line at a time. For every real case, the root thread's
rollout and then each sub-agent's grows cut by cut (each line cut at its edges, middle and
newline; with ``--slow`` densely), and each cut is ingested through the store, both as the
capture does (from the last ingest's mapping cache) and afresh:

- nothing but ``ingested``/``updated``/``unchanged`` happens (never an error), but for the
  root's first line, which is not parseable yet;
- what is stored is exactly what the complete lines before the cut give;
- the completed files then store exactly what a fresh ingest gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from postrun.agents.codex import Rollout, SessionLocation, list_rollouts, rollout_at
from postrun.agents.codex.mapping import MappingCache
from postrun.errors import NotParseableYet
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.conftest import FIXTURES
from tests.reliability.kit import StoredRecords, differences, read_records, store_problems
from tests.reliability.test_torn_claude_code import Offsets, dense_cuts, line_cuts

MAX_BYTES = 512 * 2**20
CASES = sorted(path for path in (FIXTURES / "codex-real").iterdir() if path.is_dir())


class Series:
    """One session's rollouts being written, ingested after each cut as the capture does."""

    def __init__(self, case: Path, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.source = case / "sessions"
        self.root = tmp_path / "sessions"
        rollouts = list_rollouts(self.source).rollouts
        self.files = sorted(  # the root thread's first: a sub-agent is part of a session that exists
            (rollout.path.relative_to(self.source) for rollout in rollouts),
            key=lambda path: (not self._is_root(path), str(path)),
        )
        here = _rollouts_at(self.root, self.files)
        self.location = SessionLocation(here[0].thread_id, here[0], tuple(here[1:]))
        self.database = Database.open(tmp_path / "store" / "postrun.db")
        self.ingester = Ingester(self.database, max_bytes=MAX_BYTES)
        self.cache: MappingCache | None = None

    def _is_root(self, relative: Path) -> bool:
        first = (self.source / relative).read_bytes().split(b"\n", 1)[0]
        return b'"parent_thread_id"' not in first

    def write(self, relative: Path, data: bytes) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def ingest(self, *, cached: bool = True) -> str:
        outcome, cache = self.ingester.ingest(self.location, self.cache if cached else None, live=True)
        self.cache = cache
        return outcome.status

    def fresh(self) -> dict[str, StoredRecords]:
        db = self.tmp_path / f"fresh-{len(list(self.tmp_path.glob('fresh-*')))}" / "postrun.db"
        with Database.open(db) as database:
            Ingester(database, max_bytes=MAX_BYTES).ingest(self.location)
        return read_records(db)

    def run(self, offsets: Offsets, *, check_every: int) -> None:
        for number, relative in enumerate(self.files):
            complete = (self.source / relative).read_bytes()
            for count, offset in enumerate(offsets(complete)):
                self.write(relative, complete[:offset])
                try:
                    status = self.ingest(cached=count % 2 == 0)
                except NotParseableYet as exc:
                    assert number == 0 and b"\n" not in complete[:offset], (relative, offset, exc)
                    continue
                assert status in ("ingested", "updated", "unchanged"), (relative, offset, status)
                if count % check_every == 0:
                    self._holds_only_complete_lines(relative, complete[:offset])
            self.write(relative, complete)
            assert self.ingest() in ("ingested", "updated", "unchanged")
        assert differences(read_records(self.database.path), self.fresh()) == []
        assert store_problems(self.database.path) == []

    def _holds_only_complete_lines(self, relative: Path, cut: bytes) -> None:
        stored = read_records(self.database.path)
        target = self.root / relative
        target.write_bytes(cut[: cut.rfind(b"\n") + 1])
        expected = self.fresh()
        target.write_bytes(cut)
        assert differences(stored, expected) == [], (relative, len(cut))

    def close(self) -> None:
        self.database.close()


def _rollouts_at(root: Path, files: list[Path]) -> list[Rollout]:
    """The rollouts the files will be once written under ``root`` (root thread first)."""
    found = [rollout_at(root / relative, folder=root) for relative in files]
    return [rollout for rollout in found if rollout is not None]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_line_cut_anywhere_stores_only_the_lines_before_it(case: Path, tmp_path: Path) -> None:
    series = Series(case, tmp_path)
    try:
        series.run(line_cuts, check_every=7)
    finally:
        series.close()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_rollout_cut_densely(case: Path, tmp_path: Path) -> None:
    series = Series(case, tmp_path)
    try:
        series.run(dense_cuts, check_every=997)
    finally:
        series.close()
