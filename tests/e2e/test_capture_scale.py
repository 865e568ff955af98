"""Capture over a long history (10,000 sessions): restart time, idle CPU and memory. Run with --slow."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import CaptureProcess, read_store, write_in_place

SESSIONS = 10_000
IDLE_SECONDS = 20.0
BASIC = "1790000000000_basic"


def make_history(root: Path, count: int) -> list[str]:
    """``count`` finished sessions (basic_act under new ids), untouched for a year."""
    source = FIXTURES / "cline/basic_act/data/sessions" / BASIC
    messages = (source / f"{BASIC}.messages.json").read_text()
    manifest = (source / f"{BASIC}.json").read_text()
    year_ago = time.time() - 365 * 24 * 3600
    ids = []
    for i in range(count):
        session_id = f"{1780000000000 + i * 1000}_h{i:05d}"
        folder = root / session_id
        folder.mkdir(parents=True)
        for name, text in ((f"{session_id}.messages.json", messages), (f"{session_id}.json", manifest)):
            path = folder / name
            path.write_text(text.replace(BASIC, session_id))
            os.utime(path, (year_ago, year_ago))
        ids.append(session_id)
    return ids


@pytest.mark.slow
def test_idle_capture_over_ten_thousand_sessions(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "data" / "sessions"
    ids = make_history(root, SESSIONS)
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_DEBOUNCE_SECONDS="0.5", POSTRUN_POLL_SECONDS="3")
    once = run_postrun("capture", "--once", env=env, timeout=600)
    assert once.returncode == 0, once.stderr[-2000:]
    assert once.stdout.startswith(f"summary: {SESSIONS} sessions, {SESSIONS} ingested, 0 updated")

    started = time.monotonic()
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(rf"cline: watching {root} \({SESSIONS} sessions present, 0 new or changed\)$")
        ready = time.monotonic() - started
        process = psutil.Process(capture.pid)
        time.sleep(2)  # let start-up settle before measuring idleness (a measurement window, not a wait)
        before, window_start = process.cpu_times(), time.monotonic()
        time.sleep(IDLE_SECONDS)  # the measurement window itself
        after, window = process.cpu_times(), time.monotonic() - window_start
        cpu = (after.user + after.system - before.user - before.system) / window * 100
        rss = process.memory_info().rss / 2**20
        print(f"\n{SESSIONS} sessions: ready in {ready:.2f} s; idle CPU {cpu:.3f} % of a core; RSS {rss:.1f} MB")
        assert ready < 5
        assert cpu < 1.0
        assert rss <= 60
        assert capture.stop()[0] == 0
        # The next start-up pass reads exactly the one session that changed meanwhile.
        messages = root / ids[-1] / f"{ids[-1]}.messages.json"
        before_digests = read_store(Path(env["POSTRUN_DB"]))[ids[-1]].step_digests
        write_in_place(messages, messages.read_bytes().replace(b"Fixing the off-by-one.", b"Fixing it.", 1))
        again = run_postrun("capture", "--once", env=env, timeout=120)
        assert again.stdout.startswith(f"summary: {SESSIONS} sessions, 0 ingested, 1 updated, {SESSIONS - 1} unchanged")
        assert read_store(Path(env["POSTRUN_DB"]))[ids[-1]].step_digests != before_digests
    finally:
        capture.kill()
