"""Load with the mirror on: 50 sessions rewritten every 200 ms (8 s in CI, a minute with
``--slow``) while capture pushes every change. No update is lost on the way: the store ends
equal to a one-shot ingest of the final files, and PostgreSQL equal to the store. The lag
itself is measured by the bench (``python -m bench.mirror``), not asserted here."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.mirror.conftest import Mirror
from tests.mirror.test_capture_mirror import wait_equal
from tests.reliability.kit import Synthetic, differences, one_shot, read_records, synthetic_id
from tests.reliability.test_load import PERIOD, SESSIONS, WRITERS, Rotation, writer
from tests.support.capture_process import CaptureProcess


def mirrored_load(tmp_path: Path, env: dict[str, str], mirror: Mirror, seconds: float) -> None:
    root = tmp_path / "cline" / "sessions"
    db = Path(env["POSTRUN_DB"])
    env = env | {"POSTRUN_CLINE_DIR": str(root), "POSTRUN_DEBOUNCE_SECONDS": "0.1", "POSTRUN_POLL_SECONDS": "0.5"}
    sessions = [Synthetic(synthetic_id(index), seed=index) for index in range(SESSIONS)]
    for session in sessions:
        for _ in range(10):
            session.grow()
        session.write(root)
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"mirror .*: caught up", timeout=90)
        rotations = [Rotation(sessions[number::WRITERS]) for number in range(WRITERS)]
        failures: list[str] = []
        deadline = time.monotonic() + seconds
        threads = [
            threading.Thread(target=writer, args=(rotation, root, number, deadline, failures), name=f"writer-{number}")
            for number, rotation in enumerate(rotations)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(seconds + 30)
        assert failures == []
        writes = sum(rotation.writes for rotation in rotations)
        assert writes >= SESSIONS * seconds / PERIOD * 0.5, "the writers fell far behind their rhythm"
        expected = one_shot(root, tmp_path / "one-shot" / "postrun.db", env)
        capture.wait_until(lambda: differences(read_records(db), expected) == [], what="the store to converge")
        wait_equal(capture, mirror, db, timeout=90)
        with mirror.server.admin(mirror.database) as admin:
            pushes = admin.execute("SELECT count(*) FROM postrun.history").fetchone()
        print(f"{writes} rewrites in {seconds:g} s; {pushes} history rows mirrored")
        assert capture.lines(r" (ERROR|WARNING) ") == []
    finally:
        capture.kill()


def test_fifty_sessions_rewritten_every_200_ms_with_the_mirror_on(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    mirrored_load(tmp_path, mirror_env, mirror, seconds=8)


@pytest.mark.slow
def test_fifty_sessions_rewritten_every_200_ms_for_a_minute_with_the_mirror_on(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    mirrored_load(tmp_path, mirror_env, mirror, seconds=60)
