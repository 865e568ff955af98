"""End to end: helper transcripts appearing and changing while the real `postrun capture` runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.support.capture_process import CaptureProcess, read_store, write_in_place

SESSION = "1795976749765_vx695"  # cline-real/h_subagents
SUB1, SUB2 = "agent_1795976750621_u6sv2j", "agent_1795976750622_zikz6r"
SOURCE = FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions" / SESSION


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The real session with its lead files only: the helpers come later."""
    shutil.copytree(FIXTURES / "cline-real" / "h_subagents" / "data", tmp_path / "data")
    for name in (SUB1, SUB2):
        (tmp_path / "data" / "sessions" / SESSION / f"{name}.messages.json").unlink()
    return tmp_path / "data" / "sessions"


@pytest.fixture
def capture(env: dict[str, str], root: Path, tmp_path: Path) -> Iterator[CaptureProcess]:
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_DEBOUNCE_SECONDS="0.2", POSTRUN_POLL_SECONDS="0.3")
    process = CaptureProcess(env, tmp_path)
    yield process
    process.kill()


def _helper_steps(db: Path, actor: str) -> tuple[str, ...]:
    stored = read_store(db).get(SESSION)
    return tuple(step_id for step_id, _ in stored.step_digests if step_id.startswith(f"{actor}/")) if stored else ()


def test_a_helper_that_appears_is_taken_in_and_a_torn_one_waits(
    capture: CaptureProcess, env: dict[str, str], root: Path
) -> None:
    db = Path(env["POSTRUN_DB"])
    capture.wait_for_log(r"INFO cline: caught up with 1 session")
    assert read_store(db)[SESSION].steps == 5  # the lead's steps alone
    folder = root / SESSION
    # Cline creates the file empty, then writes it whole.
    first = folder / f"{SUB1}.messages.json"
    write_in_place(first, b"")
    write_in_place(first, (SOURCE / first.name).read_bytes())
    capture.wait_until(lambda: len(_helper_steps(db, SUB1)) == 4, what="the first helper's steps in the store")
    # The second helper is caught mid-write: one line names the file; the rest is stored.
    second = folder / f"{SUB2}.messages.json"
    complete = (SOURCE / second.name).read_bytes()
    write_in_place(second, complete[: len(complete) // 2])
    torn_line = (
        rf"INFO cline {SESSION}: {second}: messages file not parseable yet \(mid-write\?\);"
        r" its stored steps kept, will retry on next change$"
    )
    capture.wait_for_log(torn_line)
    assert len(_helper_steps(db, SUB1)) == 4 and _helper_steps(db, SUB2) == ()
    write_in_place(second, complete)
    capture.wait_until(lambda: len(_helper_steps(db, SUB2)) == 3, what="the second helper's steps in the store")
    stored = read_store(db)[SESSION]
    assert stored.steps == 12
    assert len(capture.lines(torn_line)) == 1
    assert capture.lines(r" (ERROR|WARNING) ") == []
