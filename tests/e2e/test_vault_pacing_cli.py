"""The real `postrun capture` copies a session being written at most every ``raw_copy_seconds``,
and catches the vault up when it stops, or at the next start after a kill -9."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from postrun.store import vault
from postrun.store.db import Database
from tests.conftest import run_postrun
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support.capture_process import CaptureProcess


def kept_messages(db: Path, session_id: str) -> bytes:
    with Database.open(db) as database:
        kept = vault.kept_versions(database, session_id)[-1].files
        (messages,) = [f for f in kept if f.name.endswith(".messages.json")]
        return vault.read_blob(database, messages.hash)


def test_capture_leaves_an_open_sessions_copy_behind_then_catches_it_up_at_stop_and_after_a_kill(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "cline" / "sessions"
    root.mkdir(parents=True)
    db = Path(env["POSTRUN_DB"])
    env = dict(env, POSTRUN_CLINE_DIR=str(root), POSTRUN_DEBOUNCE_SECONDS="0.05", POSTRUN_POLL_SECONDS="0.5")
    session = Synthetic(synthetic_id(7), seed=7)
    messages = root / session.session_id / f"{session.session_id}.messages.json"
    updated = rf"cline updated {re.escape(session.session_id)} "

    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"watching")
        session.grow()
        session.write(root)
        capture.wait_for_log(rf"cline ingested {re.escape(session.session_id)} ")
        first = messages.read_bytes()
        for count in (1, 2):
            session.grow()
            session.write(root)
            capture.wait_for_log(updated, count=count)
        assert kept_messages(db, session.session_id) == first  # the records moved on, the copy waits
        code, _ = capture.stop(signal.SIGTERM)
        assert code == 0, capture.log()
    finally:
        capture.kill()
    assert kept_messages(db, session.session_id) == messages.read_bytes()

    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"watching")
        before = messages.read_bytes()
        session.grow()
        session.write(root)
        capture.wait_for_log(updated)
        capture.stop(signal.SIGKILL)
    finally:
        capture.kill()
    assert kept_messages(db, session.session_id) == before
    result = run_postrun("capture", "--once", env=env)
    assert result.returncode == 0, result.stderr
    assert "1 unchanged" in result.stdout  # read again for its copy alone: its records were stored
    assert kept_messages(db, session.session_id) == messages.read_bytes()
