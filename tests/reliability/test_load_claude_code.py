"""Suite 3 for Claude Code, load: many transcripts appended to at once while readers read.

30 generated sessions (a third with sub-agents) grow concurrently, a few lines every 200 ms
each, the way Claude Code appends (sometimes a line in two writes); new sessions appear
meanwhile. Another process lists the sessions and exports one in a loop the whole time.
Then the capture's store converges to exactly what a one-shot ``postrun ingest`` of the final
files gives, no reader failed, and the capture logged no error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.claude_history import write_claude_history
from tests.reliability.growing import SESSIONS, Growing, run_load


def growing(source: Path, target: Path, transcript: Path) -> Growing:
    session_id = transcript.stem
    files = [transcript, *sorted((transcript.parent / session_id).rglob("*.jsonl"))]
    pending = {target / path.relative_to(source): path.read_bytes().splitlines(keepends=True) for path in files}
    metas = sorted((transcript.parent / session_id).rglob("*.meta.json"))
    return Growing(pending, [(meta, target / meta.relative_to(source)) for meta in metas])


def load_test(tmp_path: Path, env: dict[str, str], seconds: float) -> None:
    source = tmp_path / "generated" / "projects"
    totals = write_claude_history(source, seed=11, sessions=SESSIONS + 10, mean_turns=1.5)
    root = tmp_path / "claude" / "projects"
    root.mkdir(parents=True)
    env = env | {"POSTRUN_AGENTS": "claude-code", "POSTRUN_CLAUDE_DIR": str(root)}
    sessions = [growing(source, root, transcript) for transcript in totals.transcripts]
    run_load(tmp_path, env, seconds, kind="claude-code", root=root, sessions=sessions)


def test_thirty_transcripts_appended_to_every_200_ms(tmp_path: Path, env: dict[str, str]) -> None:
    load_test(tmp_path, env, seconds=15)


@pytest.mark.slow
def test_thirty_transcripts_appended_to_for_a_minute(tmp_path: Path, env: dict[str, str]) -> None:
    load_test(tmp_path, env, seconds=60)
