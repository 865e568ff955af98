"""Suite 3 for Codex, load: many rollouts appended to at once while readers read.

40 generated sessions (sub-agents' rollouts beside their parents', some sessions resumed);
30 of them grow concurrently, a few lines every 200 ms each, the way Codex appends
(sometimes a line in two writes, a sub-agent's rollout created by its first line), and the
other 10 appear meanwhile. Another process lists the sessions and exports one in a loop the
whole time. Then the capture's store converges to exactly what a one-shot ``postrun ingest``
of the final rollouts gives, no reader failed, and the capture logged no error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.codex_history import write_codex_history
from postrun.agents.codex import group_sessions, list_rollouts
from postrun.agents.codex.reading import read_metas
from tests.reliability.growing import SESSIONS, Growing, run_load


def load_test(tmp_path: Path, env: dict[str, str], seconds: float) -> None:
    source = tmp_path / "generated" / "sessions"
    write_codex_history(source, seed=11, sessions=SESSIONS + 10, mean_turns=1.5)
    root = tmp_path / "codex" / "sessions"
    root.mkdir(parents=True)
    listing = list_rollouts(source)
    metas, problems = read_metas(listing.rollouts, max_bytes=2**28)
    assert problems == {}
    located = group_sessions(listing.rollouts, metas)
    assert len(located) == SESSIONS + 10 and any(location.children for location in located[:SESSIONS])
    sessions = [
        Growing(
            {
                root / rollout.path.relative_to(source): rollout.path.read_bytes().splitlines(keepends=True)
                for rollout in location.rollouts
            },  # the root thread's rollout first
            [],
        )
        for location in located
    ]
    env = env | {"POSTRUN_AGENTS": "codex", "POSTRUN_CODEX_DIR": str(root)}
    run_load(tmp_path, env, seconds, kind="codex", root=root, sessions=sessions)


def test_thirty_rollouts_appended_to_every_200_ms(tmp_path: Path, env: dict[str, str]) -> None:
    load_test(tmp_path, env, seconds=15)


@pytest.mark.slow
def test_thirty_rollouts_appended_to_for_a_minute(tmp_path: Path, env: dict[str, str]) -> None:
    load_test(tmp_path, env, seconds=60)
