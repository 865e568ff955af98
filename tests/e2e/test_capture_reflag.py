"""After the flag rules changed, capture re-flags the stored sessions in the background: it tells
the service manager it is ready first (a large store re-flags for minutes, longer than a unit's
start timeout), goes through the one writer between live work, and `postrun status` shows how
far it got. The real `postrun capture`, a datagram socket as the service manager."""

from __future__ import annotations

import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from postrun.review.flags import RULES_VERSION
from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import CaptureProcess

SESSIONS = ("basic_act", "review_flags", "plan_act_resumed_open")

# `postrun capture` whose re-flag of each stored session waits for ``release`` to exist: the
# re-flag cannot end before the test says so, whatever the machine.
HELD_REFLAG = """
import pathlib, sys, time
import postrun.ingest.reflag
from postrun.cli import main
release = pathlib.Path(sys.argv.pop(1))
real = postrun.ingest.reflag.stored_mapped_session
def held(database, session_id):
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return real(database, session_id)
postrun.ingest.reflag.stored_mapped_session = held
sys.argv[0] = "postrun"
main()
"""


@pytest.fixture
def stored(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A store of three sessions flagged under older rules, its sessions root unchanged since."""
    root = tmp_path / "data" / "sessions"
    for case in SESSIONS:
        shutil.copytree(FIXTURES / "cline" / case / "data" / "sessions", root, dirs_exist_ok=True)
    env["POSTRUN_CLINE_DIR"] = str(root)
    assert run_postrun("ingest", str(root), env=env).returncode == 0
    connection = apsw.Connection(env["POSTRUN_DB"])
    connection.execute("UPDATE store_meta SET value = 'flags-0' WHERE key = 'flag_rules_version'")
    connection.close()
    return env


@pytest.fixture
def notify(stored: dict[str, str]) -> Iterator[Callable[[float], list[str]]]:
    name = f"postrun-test-reflag-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        stored["NOTIFY_SOCKET"] = "@" + name
        messages: list[str] = []

        def until_ready(timeout: float) -> list[str]:
            deadline = time.monotonic() + timeout
            while not any("READY=1" in message for message in messages):
                server.settimeout(max(deadline - time.monotonic(), 0.01))
                try:
                    messages.append(server.recv(4096).decode())
                except TimeoutError:
                    break
            return messages

        yield until_ready


def rules_version(db: str) -> str:
    connection = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return str(connection.execute("SELECT value FROM store_meta WHERE key = 'flag_rules_version'").get)
    finally:
        connection.close()


def test_capture_is_ready_before_it_re_flags_and_status_shows_the_progress(
    stored: dict[str, str], notify: Callable[[float], list[str]], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    capture = CaptureProcess(stored, tmp_path, program=(sys.executable, "-c", HELD_REFLAG, str(release)))
    try:
        messages = notify(30)
        assert any("READY=1" in message for message in messages), capture.log()  # while the re-flag is held
        capture.wait_for_log(
            r"INFO capture: re-flagging 3 stored sessions in the background \(the flag rules changed\)"
        )
        status = run_postrun("status", env=stored)
        assert status.returncode == 0, status.stderr
        assert "re-flagging: 0/3 stored sessions (the flag rules changed)" in status.stdout.splitlines()
        assert rules_version(stored["POSTRUN_DB"]) == "flags-0"
        release.touch()
        capture.wait_for_log(r"INFO capture: re-flagged 3 stored sessions \(the flag rules changed\)")
        assert rules_version(stored["POSTRUN_DB"]) == RULES_VERSION
        assert "re-flagging" not in run_postrun("status", env=stored).stdout
        code, _ = capture.stop()
        assert code == 0, capture.log()
    finally:
        capture.kill()
