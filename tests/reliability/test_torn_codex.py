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
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.conftest import FIXTURES
from tests.reliability.test_torn_claude_code import Series, dense_cuts, line_cuts

MAX_BYTES = 512 * 2**20
CASES = sorted(path for path in (FIXTURES / "codex-real").iterdir() if path.is_dir())


class CodexSeries(Series):
    """One session's rollouts being written, ingested after each cut as the capture does."""

    def __init__(self, case: Path, tmp_path: Path) -> None:  # its own files; the run is the same
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
        self.cache = None

    def _is_root(self, relative: Path) -> bool:
        first = (self.source / relative).read_bytes().split(b"\n", 1)[0]
        return b'"parent_thread_id"' not in first


def _rollouts_at(root: Path, files: list[Path]) -> list[Rollout]:
    """The rollouts the files will be once written under ``root`` (root thread first)."""
    found = [rollout_at(root / relative, folder=root) for relative in files]
    return [rollout for rollout in found if rollout is not None]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_line_cut_anywhere_stores_only_the_lines_before_it(case: Path, tmp_path: Path) -> None:
    series = CodexSeries(case, tmp_path)
    try:
        series.run(line_cuts, check_every=7)
    finally:
        series.close()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_rollout_cut_densely(case: Path, tmp_path: Path) -> None:
    series = CodexSeries(case, tmp_path)
    try:
        series.run(dense_cuts, check_every=997)
    finally:
        series.close()
