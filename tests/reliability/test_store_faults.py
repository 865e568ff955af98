"""Suite 5, faults of the store: disk full, locked, removed or replaced while Postrun runs.

Each fault gets a clear one-line message, a retry, no corruption, and capture keeps
recording once the fault clears (its store then equals a one-shot ingest of the files).

- **Disk full** is a real ``SQLITE_FULL`` raised by SQLite itself: ``PRAGMA max_page_count``
  is a per-connection limit, so a ``sitecustomize`` loaded into the real ``postrun``
  process applies the limit the test writes into a control file to every connection the
  process opens (the test can lift it at any time); nothing of Postrun is replaced.
- **Locked** longer than the 5 s busy timeout, by another process's write transaction. For
  capture this is proven by ``tests/e2e/test_capture.py::test_locked_store_is_retried``;
  here ``postrun ingest`` meets it.
- **Removed** while capture ingests a history (``test_store_removed_while_running_is_recreated``
  and ``test_store_folder_removed_while_idle`` in ``tests/e2e/test_capture.py`` cover an
  idle capture): the new store is caught up completely.
- **Replaced** by a file that is not a database: capture says so, never writes over it,
  and recreates the store once it is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from postrun.store.db import Database
from tests.conftest import run_postrun
from tests.reliability.kit import (
    Synthetic,
    differences,
    install_sitecustomize,
    one_shot,
    read_records,
    store_problems,
    synthetic_id,
)
from tests.support.capture_process import CaptureProcess

LIMIT_SITE = """
import os

_control = os.environ.get("TEST_MAX_PAGE_COUNT_FILE")
if _control:
    import apsw

    _Connection = apsw.Connection
    _UNLIMITED = 2147483646

    class _LimitedConnection(_Connection):
        # Applies the page limit the test writes into the control file (re-read when the file
        # is replaced); a missing or empty file means no limit.
        _seen = None

        def execute(self, *args, **kwargs):
            try:
                info = os.stat(_control)
                seen = (info.st_ino, info.st_mtime_ns)
            except FileNotFoundError:
                seen = None
            if seen != self._seen:
                self._seen = seen
                pages = 0
                if seen is not None:
                    with open(_control) as handle:
                        pages = int(handle.read().strip() or 0)
                _Connection.execute(self, f"pragma max_page_count = {pages or _UNLIMITED}")
            return _Connection.execute(self, *args, **kwargs)

    apsw.Connection = _LimitedConnection

_lock_full = os.environ.get("TEST_LOCK_FULL_FILE")
if _lock_full:
    import errno

    _pwrite = os.pwrite

    def _full_pwrite(fd, data, offset):
        # While the control file exists, the capture lock's status cannot be written, as on a
        # file system with no free block (the lock file is emptied at every release).
        if os.path.exists(_lock_full) and os.readlink(f"/proc/self/fd/{fd}").endswith(".capture.lock"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return _pwrite(fd, data, offset)

    os.pwrite = _full_pwrite
"""
FULL = "the disk or database is full"


class PageLimit:
    """The control file the ``sitecustomize`` above reads."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.path = folder / "max_page_count"
        install_sitecustomize(folder / "site", LIMIT_SITE, env)
        env["TEST_MAX_PAGE_COUNT_FILE"] = str(self.path)

    def set_to_current_size(self, db: Path) -> None:
        """No page can be added any more: the next transaction that grows the file fails."""
        connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            pages = int(connection.execute("pragma page_count").get)
        finally:
            connection.close()
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(str(pages))
        os.replace(temporary, self.path)  # a new inode: the process sees the change at once

    def lift(self) -> None:
        self.path.unlink()


def sessions_root(tmp_path: Path, count: int, *, calls: int = 6) -> tuple[Path, list[Synthetic]]:
    root = tmp_path / "cline" / "sessions"
    sessions = []
    for index in range(count):
        session = Synthetic(synthetic_id(index), seed=index)
        for _ in range(calls):
            session.grow()
        session.write(root)
        sessions.append(session)
    return root, sessions


@pytest.fixture
def fault_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return env | {
        "POSTRUN_CLINE_DIR": str(tmp_path / "cline" / "sessions"),
        "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        "POSTRUN_POLL_SECONDS": "0.3",
        "POSTRUN_LOG_LEVEL": "DEBUG",
    }


@pytest.fixture
def started(fault_env: dict[str, str], tmp_path: Path) -> Iterator[list[CaptureProcess]]:
    processes: list[CaptureProcess] = []
    yield processes
    for process in processes:
        process.kill()


def assert_converged(capture: CaptureProcess, root: Path, db: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The store holds exactly what a one-shot ingest of the files gives, and is sound."""
    expected = one_shot(root, tmp_path / "one-shot" / "postrun.db", env)
    capture.wait_until(lambda: differences(read_records(db), expected) == [], what="the store to converge")
    assert store_problems(db) == []


def assert_clean_log(capture: CaptureProcess) -> None:
    assert capture.lines(r"Traceback|internal error") == []


def test_disk_full_under_capture_is_said_once_retried_and_recovered(
    fault_env: dict[str, str], tmp_path: Path, started: list[CaptureProcess]
) -> None:
    root, sessions = sessions_root(tmp_path, 3)
    db = Path(fault_env["POSTRUN_DB"])
    limit = PageLimit(tmp_path, fault_env)
    capture = CaptureProcess(fault_env, tmp_path)
    started.append(capture)
    capture.wait_for_log(r"cline: caught up with 3 sessions")
    before = read_records(db)
    limit.set_to_current_size(db)
    # A new session and a grown one: both need pages the store may not take.
    late = Synthetic(synthetic_id(7), seed=7)
    for _ in range(40):
        late.grow()
    late.write(root)
    for _ in range(40):
        sessions[0].grow()
    sessions[0].write(root)
    capture.wait_for_log(rf"ERROR store {db}: {FULL}; capture keeps running and retries")
    capture.wait_for_log(rf"DEBUG store {db}: still failing: {FULL}")  # the retry, said quietly
    assert read_records(db) == before  # the failed transactions left nothing behind
    assert store_problems(db) == []
    limit.lift()
    capture.wait_for_log(rf"INFO store {db}: writable again")
    assert_converged(capture, root, db, fault_env, tmp_path)
    assert len(capture.lines(r" ERROR ")) == 1  # one error for the whole episode
    # And it keeps recording.
    sessions[1].grow()
    sessions[1].write(root)
    assert_converged(capture, root, db, fault_env, tmp_path / "again")
    assert capture.stop()[0] == 0
    assert_clean_log(capture)


def test_disk_full_during_the_start_up_catch_up_is_said_once_retried_and_recovered(
    fault_env: dict[str, str], tmp_path: Path, started: list[CaptureProcess]
) -> None:
    """The catch-up's transaction meets the full disk: it is rolled back, the sessions that
    failed on their own in it are reported all the same, and the catch-up goes on from there
    once the disk has room."""
    root, _ = sessions_root(tmp_path, 6)
    torn = root / synthetic_id(0) / f"{synthetic_id(0)}.messages.json"  # the first of the catch-up
    torn.write_bytes(torn.read_bytes()[:120])
    db = Path(fault_env["POSTRUN_DB"])
    Database.open(db).close()  # an empty store, full from the start
    limit = PageLimit(tmp_path, fault_env)
    limit.set_to_current_size(db)
    once = run_postrun("capture", "--once", env=fault_env)
    assert once.returncode == 1
    assert once.stdout.startswith("summary: 6 sessions, 0 ingested, 0 updated, 0 unchanged, 1 torn, 5 failed in ")
    assert [line.split(" ", 1)[1] for line in once.stderr.splitlines() if " ERROR " in line] == [
        f"ERROR store {db}: {FULL}; capture keeps running and retries (every 60 s at most)"
    ]
    capture = CaptureProcess(fault_env, tmp_path)
    started.append(capture)
    capture.wait_for_log(rf"ERROR store {db}: {FULL}; capture keeps running and retries")
    capture.wait_for_log(rf"INFO cline {synthetic_id(0)}: messages file not parseable yet")
    capture.wait_for_log(rf"DEBUG store {db}: still failing: {FULL}")  # the catch-up, retried
    assert read_records(db) == {}
    assert store_problems(db) == []
    limit.lift()
    capture.wait_for_log(rf"INFO store {db}: writable again")
    capture.wait_for_log(r"INFO cline: caught up with 6 sessions in ")
    assert_converged(capture, root, db, fault_env, tmp_path)
    assert len(capture.lines(r" ERROR ")) == 1
    assert len(capture.lines(rf"cline {synthetic_id(0)}: messages file not parseable yet")) == 1
    assert capture.stop()[0] == 0
    assert_clean_log(capture)


def test_a_capture_started_on_a_full_disk_keeps_running_and_retries(
    fault_env: dict[str, str], tmp_path: Path, started: list[CaptureProcess]
) -> None:
    """README, Guarantees: a full disk is said in one line, retried, and recording carries on
    once it clears. On a full disk the capture lock's status cannot be written either: that
    once ended `capture --once` and a starting capture with "internal error: OSError"."""
    root, _ = sessions_root(tmp_path, 3)
    db = Path(fault_env["POSTRUN_DB"])
    Database.open(db).close()
    limit = PageLimit(tmp_path, fault_env)
    limit.set_to_current_size(db)
    lock_full = tmp_path / "lock-full"
    lock_full.write_text("")
    fault_env["TEST_LOCK_FULL_FILE"] = str(lock_full)
    once = run_postrun("capture", "--once", env=fault_env)
    assert "internal error" not in once.stderr and "Traceback" not in once.stderr, once.stderr
    assert once.stdout.startswith("summary: 3 sessions, 0 ingested, 0 updated, 0 unchanged, 0 torn, 3 failed in ")
    assert [line.split(" ", 1)[1] for line in once.stderr.splitlines() if " ERROR " in line] == [
        f"ERROR store {db}: {FULL}; capture keeps running and retries (every 60 s at most)"
    ]
    capture = CaptureProcess(fault_env, tmp_path)
    started.append(capture)
    capture.wait_for_log(rf"ERROR store {db}: {FULL}; capture keeps running and retries")
    status = run_postrun("status", env=fault_env)
    assert status.returncode == 0 and status.stdout.startswith("capture: running"), status.stdout
    lock_full.unlink()
    limit.lift()
    capture.wait_for_log(rf"INFO store {db}: writable again")
    assert_converged(capture, root, db, fault_env, tmp_path)
    assert capture.stop()[0] == 0
    assert_clean_log(capture)


def test_disk_full_under_postrun_ingest_is_one_line_and_changes_nothing(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    root, sessions = sessions_root(tmp_path, 2)
    db = Path(fault_env["POSTRUN_DB"])
    assert run_postrun("ingest", str(root / sessions[0].session_id), env=fault_env).returncode == 0
    before = read_records(db)
    limit = PageLimit(tmp_path, fault_env)
    limit.set_to_current_size(db)
    for _ in range(40):
        sessions[0].grow()
    sessions[0].write(root)
    full = run_postrun("ingest", str(root), env=fault_env)
    assert full.returncode == 1
    assert full.stdout == ""
    # The first session meets the full disk; the second would too, so it is not tried.
    assert full.stderr.splitlines() == [f"error: {db}: {FULL}; 1 more session(s) not tried"], full.stderr
    assert read_records(db) == before
    assert store_problems(db) == []
    limit.lift()
    assert run_postrun("ingest", str(root), env=fault_env).returncode == 0
    assert differences(read_records(db), one_shot(root, tmp_path / "one-shot" / "postrun.db", fault_env)) == []


def test_store_locked_longer_than_the_busy_timeout_under_postrun_ingest(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    root, sessions = sessions_root(tmp_path, 3)
    db = Path(fault_env["POSTRUN_DB"])
    assert run_postrun("ingest", str(root), env=fault_env).returncode == 0
    before = read_records(db)
    for session in sessions:
        session.grow()
        session.write(root)
    # Another process holds the write lock for longer than the busy timeout (5 s).
    blocker = subprocess.Popen(
        [
            "python3",
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            " c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert blocker.stdout is not None and blocker.stdout.readline().strip() == "locked"
        started = time.monotonic()
        locked = run_postrun("ingest", str(root), env=fault_env)
        waited = time.monotonic() - started
    finally:
        blocker.kill()
        blocker.wait(10)
        if blocker.stdout is not None:
            blocker.stdout.close()
    assert locked.returncode == 1
    # One busy timeout, not one per session: the others would fail the same way.
    assert locked.stderr == f"error: {db}: the database is locked by another process; 2 more session(s) not tried\n"
    assert 5 <= waited < 10
    assert read_records(db) == before
    assert store_problems(db) == []
    assert run_postrun("ingest", str(root), env=fault_env).returncode == 0  # the retry, once it is free
    assert differences(read_records(db), one_shot(root, tmp_path / "one-shot" / "postrun.db", fault_env)) == []


def test_store_removed_during_a_catch_up_is_recreated_and_caught_up_completely(
    fault_env: dict[str, str], tmp_path: Path, started: list[CaptureProcess]
) -> None:
    root, _ = sessions_root(tmp_path, 60, calls=20)
    db = Path(fault_env["POSTRUN_DB"])
    capture = CaptureProcess(fault_env, tmp_path)
    started.append(capture)
    capture.wait_until(lambda: len(capture.lines(r" DEBUG cline ingested ")) >= 10, what="a part of the catch-up")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    capture.wait_for_log(r"ERROR store .*: the database file was removed or replaced; recreating it and catching up")
    assert_converged(capture, root, db, fault_env, tmp_path)
    assert len(capture.lines(r" ERROR ")) == 1
    assert capture.stop()[0] == 0
    assert_clean_log(capture)


def test_store_replaced_by_a_file_that_is_not_a_database(
    fault_env: dict[str, str], tmp_path: Path, started: list[CaptureProcess]
) -> None:
    root, sessions = sessions_root(tmp_path, 2)
    db = Path(fault_env["POSTRUN_DB"])
    capture = CaptureProcess(fault_env, tmp_path)
    started.append(capture)
    capture.wait_for_log(r"cline: caught up with 2 sessions")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    garbage = b"not a database, and not Postrun's to overwrite\n" * 100
    db.write_bytes(garbage)
    sessions[0].grow()
    sessions[0].write(root)
    capture.wait_for_log(rf"ERROR store {db}: cannot use the store \(the file is not a SQLite database\)")
    capture.wait_for_log(r"DEBUG store .*: still failing: ")  # retried
    assert db.read_bytes() == garbage  # never written over
    db.unlink()
    assert_converged(capture, root, db, fault_env, tmp_path)
    assert capture.process.poll() is None
    capture.send(signal.SIGTERM)
    assert capture.process.wait(10) == 0
    assert_clean_log(capture)


def test_a_full_store_names_the_full_disk_not_the_failed_rollback(tmp_path: Path) -> None:
    """Regression: when a statement without a statement journal (a search-index insert) hits
    SQLITE_FULL, SQLite rolls the whole transaction back by itself; the rollback on the way
    out then failed with "cannot rollback - no transaction is active", and that second error
    hid the first (capture logged it as the reason the store failed)."""
    with Database.open(tmp_path / "store" / "postrun.db") as database:
        database.execute(f"pragma max_page_count = {database.execute('pragma page_count').get}")
        with pytest.raises(apsw.FullError), database.transaction() as connection:
            for rowid in range(1000):
                connection.execute("INSERT INTO step_search (rowid, body) VALUES (?, ?)", (rowid, "word " * 300))
        assert database.connection.getautocommit()  # no transaction left open
        database.execute("pragma max_page_count = 2147483646")
        with database.transaction() as connection:
            connection.execute("INSERT INTO step_search (rowid, body) VALUES (1, 'fits again')")
        assert database.integrity_problems() == ["ok"]
