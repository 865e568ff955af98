"""What `postrun forget` leaves in the store's files: nothing, or it says what is left and exits 75.

Through the real `postrun` process, on a real store; the files are scanned plain and inside
every zstd frame (tests/support/forensic.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import orjson
import pytest

from postrun.exitcodes import ExitCode
from postrun.store.db import Database
from postrun.store.forget import remove_sessions
from tests.conftest import FIXTURES, postrun_command, run_postrun
from tests.support import forensic
from tests.support.capture_process import CaptureProcess, copy_data, wait_until

SESSION = "1790000100000_review"
BASIC = "1790000000000_basic"
MARKER = "Qzforgetmarker7f3a9"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = copy_data("cline/review_flags", tmp_path / "data")
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions" / BASIC, root / BASIC)
    return root


def rewrite(root: Path, session_id: str, round_: int) -> None:
    """The session as Cline rewrites it: its transcript again, with one more prompt (the marker)."""
    messages = root / session_id / f"{session_id}.messages.json"
    document = orjson.loads(messages.read_bytes())
    text = f"{MARKER} round {round_} " + "words of a longer prompt " * 40 * (round_ + 1)
    document["messages"].append(
        {
            "id": f"msg_r{round_}",
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "ts": 1790000200000 + round_,
        }
    )
    messages.write_bytes(orjson.dumps(document))


def stored_rewritten(env: dict[str, str], root: Path, rounds: int = 4) -> forensic.Evidence:
    """Both sessions stored, the forgotten one rewritten and re-ingested ``rounds`` times; what
    the store holds of it then."""
    for round_ in range(rounds):
        rewrite(root, SESSION, round_)
        done = run_postrun("ingest", str(root / SESSION), str(root / BASIC), env=env)
        assert done.returncode == 0, done.stderr
    found = forensic.evidence(Path(env["POSTRUN_DB"]), SESSION, MARKER)
    assert len(found.pieces) >= 10
    return found


def everywhere(db: Path, found: forensic.Evidence, *extra: Path) -> list[str]:
    return [trace for path in (*forensic.store_files(db), *extra) for trace in forensic.traces(path, found)]


def test_a_rewritten_session_leaves_no_byte_after_forget_nor_in_a_backup(env: dict[str, str], root: Path) -> None:
    db = Path(env["POSTRUN_DB"])
    found = stored_rewritten(env, root)
    assert everywhere(db, found)  # the scan sees the session while it is stored

    done = run_postrun("forget", SESSION, "--yes", env=env)
    assert done.returncode == 0, done.stderr
    backup = db.parent / "after-forget.db"
    assert run_postrun("backup", str(backup), env=env).returncode == 0
    assert everywhere(db, found, backup) == []
    assert BASIC in run_postrun("sessions", env=env).stdout  # the other session is whole
    assert "integrity ok" in run_postrun("doctor", env=env).stdout


@pytest.fixture
def reader(env: dict[str, str], root: Path) -> Iterator[apsw.Connection]:
    """Another process's view of the store, in a read transaction (as a long export holds one)."""
    done = run_postrun("ingest", str(root / SESSION), str(root / BASIC), env=env)
    assert done.returncode == 0, done.stderr
    connection = apsw.Connection(env["POSTRUN_DB"], flags=apsw.SQLITE_OPEN_READONLY)
    connection.execute("BEGIN")
    assert connection.execute("SELECT count(*) FROM sessions").get == 2
    yield connection
    if not connection.getautocommit():
        connection.execute("COMMIT")
    connection.close()


def scrub_pending(db: Path) -> str | None:
    with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as connection:
        row = connection.execute("SELECT value FROM store_meta WHERE key = 'scrub_pending'").fetchone()
    return None if row is None else str(row[0])


def test_a_reader_that_stays_keeps_the_scrub_from_finishing_and_forget_says_so(
    env: dict[str, str], root: Path, reader: apsw.Connection, tmp_path: Path
) -> None:
    db = Path(env["POSTRUN_DB"])
    found = forensic.evidence(db, SESSION, "Clean up the deploy and check the config")
    done = run_postrun("forget", SESSION, "--yes", env=env)
    assert done.returncode == 75 == ExitCode.SCRUB_PENDING, done.stderr
    assert f"forgot {SESSION}: 12 steps" in done.stdout  # its rows are gone from every table
    assert (
        "the scrub is not finished: the store file and its write-ahead log still hold the removed bytes until"
        " the log, which holds the rewritten store, is copied into the file and emptied (another process holds"
        " a read transaction open on an older snapshot of the store); a running capture finishes it when it can"
        in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert everywhere(db, found)  # honest: the bytes are there
    assert "a forget's scrub is not finished" in run_postrun("doctor", env=env).stdout
    assert SESSION not in run_postrun("sessions", env=env).stdout

    # A running capture finishes it once the reader is gone, and says so.
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_DEBOUNCE_SECONDS="0.2", POSTRUN_POLL_SECONDS="0.5")
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"INFO cline: caught up")
        assert scrub_pending(db) == "checkpoint"
        reader.execute("COMMIT")
        capture.wait_for_log(r"INFO capture: finished the scrub a forget or an exclusion left")
        assert scrub_pending(db) is None
        assert everywhere(db, found) == []
    finally:
        capture.kill()


_READER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN")
print(connection.execute("SELECT count(*) FROM steps").fetchone()[0], flush=True)
sys.stdin.read()  # until the test closes it
connection.execute("COMMIT")
"""


def test_a_single_capture_run_says_when_a_reader_keeps_the_scrub_from_finishing(
    env: dict[str, str], root: Path
) -> None:
    """A read transaction in another process (a `sqlite3` shell, a script) outlives forget's
    wait: `capture --once` cannot finish the scrub either, and says to run it again, not that
    it will retry (it ends); run again once the reader is gone, it finishes it."""
    db = Path(env["POSTRUN_DB"])
    found = stored_rewritten(env, root, rounds=1)
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdout is not None and int(reader.stdout.readline()) > 0  # its transaction is open
        done = run_postrun("forget", SESSION, "--yes", env=env)
        assert done.returncode == 75 == ExitCode.SCRUB_PENDING, done.stderr
        once = run_postrun("capture", "--once", env=env)
        assert once.returncode == 0, once.stderr
        left = "the scrub a forget or an exclusion left is not finished yet: the store file and its write-ahead log"
        assert left in once.stderr
        assert "run `postrun capture --once` again once no other process reads the store" in once.stderr
        assert "will retry" not in once.stderr
        assert everywhere(db, found)  # honest: the bytes are there
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(timeout=30)
    again = run_postrun("capture", "--once", env=env)
    assert "finished the scrub a forget or an exclusion left" in again.stderr, again.stderr
    assert everywhere(db, found) == []


def test_a_reader_that_finishes_within_the_wait_lets_the_scrub_finish(
    env: dict[str, str], reader: apsw.Connection
) -> None:
    db = Path(env["POSTRUN_DB"])
    found = forensic.evidence(db, SESSION, "Clean up the deploy and check the config")
    forget = subprocess.Popen(
        [*postrun_command(), "forget", SESSION, "--yes"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_until(lambda: scrub_pending(db) == "checkpoint" or None, what="forget waiting for the reader")
        reader.execute("COMMIT")
        out, err = forget.communicate(timeout=60)
    finally:
        forget.kill()
    assert forget.returncode == 0, err
    assert f"forgot {SESSION}" in out.decode()
    assert scrub_pending(db) is None and everywhere(db, found) == []


def test_a_writer_that_keeps_the_store_locked_leaves_the_sessions_and_forget_says_so_in_one_line(
    env: dict[str, str], root: Path
) -> None:
    """Forget while another process writes (a capture's long batch): after the busy timeout, one
    line and exit 1, and nothing removed (it was an internal error)."""
    done = run_postrun("ingest", str(root / SESSION), str(root / BASIC), env=env)
    assert done.returncode == 0, done.stderr
    writer = apsw.Connection(env["POSTRUN_DB"])
    writer.execute("BEGIN IMMEDIATE")
    try:
        refused = run_postrun("forget", SESSION, "--yes", env=env)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert refused.returncode == ExitCode.FAILURE, refused.stderr
    assert refused.stderr.splitlines() == [
        f"error: {env['POSTRUN_DB']}: nothing was forgotten: the database is locked by another process"
    ]
    assert SESSION in run_postrun("sessions", env=env).stdout
    assert run_postrun("forget", SESSION, "--yes", env=env).returncode == 0  # once the writer is done


def test_a_backup_made_before_the_scrub_finished_holds_nothing_of_the_forgotten(
    env: dict[str, str], root: Path
) -> None:
    db = Path(env["POSTRUN_DB"])
    found = stored_rewritten(env, root)
    # The rows removed and the rewrite left pending: what a forget leaves when another writer
    # holds the store through its VACUUM (exit 75), and a workspace found excluded until the scrub.
    with Database.open(db) as database:
        remove_sessions(database, [SESSION], now="2026-12-01T00:00:00.000Z")
    assert scrub_pending(db) == "rewrite" and everywhere(db, found)
    backup = db.parent / "while-pending.db"
    made = run_postrun("backup", str(backup), env=env)
    assert made.returncode == 0, made.stderr
    assert forensic.traces(backup, found) == []  # the copy scrubbed, not the store's pages as they were
    assert scrub_pending(backup) is None and scrub_pending(db) == "rewrite"  # the store is the capture's to scrub
    kept = run_postrun("--db", str(backup), "sessions", env=env)
    assert BASIC in kept.stdout and SESSION not in kept.stdout
