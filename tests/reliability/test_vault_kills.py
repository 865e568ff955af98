"""kill -9 of the real `postrun reingest`, `backup` and `restore` in the middle of their work.

Each kill lands at a moment the test sees on disk (some sessions rebuilt, the backup's
temporary file present, the before-restore copy under way or done) or at a random time.
After every kill the store passes SQLite's integrity check and holds, record by record,
one state it legitimately held (never a mix); a finished run afterwards converges.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.store import codec
from postrun.store.backup import verify_backup
from postrun.store.db import Database
from tests.conftest import postrun_command, run_postrun
from tests.reliability.kit import StoredRecords, Synthetic, isolated_env, read_records, store_problems, synthetic_id

SESSIONS = 24


def count(db: Path, sql: str) -> int:
    try:
        connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return 0
    try:
        connection.set_busy_timeout(2000)
        return int(connection.execute(sql).get)
    except apsw.Error:
        return 0
    finally:
        connection.close()


def kill_when(args: list[str], env: dict[str, str], moment: Callable[[], bool], deadline: float = 60) -> bool:
    """Run ``postrun ARGS`` and SIGKILL it as soon as ``moment()`` is true; False when it finished first."""
    process = subprocess.Popen([*postrun_command(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        limit = time.monotonic() + deadline
        while process.poll() is None and time.monotonic() < limit:
            if moment():
                process.send_signal(signal.SIGKILL)
                process.wait(10)
                return True
            time.sleep(0.0005)
        assert process.poll() is not None, f"postrun {' '.join(args)} neither finished nor reached the moment"
        return False
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        assert process.stderr is not None
        stderr = process.stderr.read().decode(errors="replace")
        process.stderr.close()
        assert "Traceback" not in stderr, stderr


def after(seconds: float) -> Callable[[], bool]:
    at = time.monotonic() + seconds
    return lambda: time.monotonic() >= at


@pytest.fixture
def history(tmp_path: Path) -> tuple[dict[str, str], Path, dict[str, StoredRecords]]:
    env = isolated_env(tmp_path)
    db = tmp_path / "store" / "postrun.db"
    env["POSTRUN_DB"] = str(db)
    root = tmp_path / "cline" / "sessions"
    with Database.open(db) as database:
        ingester = Ingester(database, max_bytes=2**26)
        for index in range(SESSIONS):
            session = Synthetic(synthetic_id(index), seed=index)
            for _ in range(40):
                session.grow()
            session.write(root)
            ingester.ingest(SessionLocation.in_root(root, session.session_id))
    return env, db, read_records(db)


def test_kill_during_reingest_leaves_whole_sessions_and_a_rerun_converges(history, tmp_path: Path) -> None:
    env, db, reference = history
    rng = random.Random(12)
    for round_ in range(4):
        connection = apsw.Connection(str(db))
        codec.register(connection)  # the search index reads a step's text through them to unindex it
        with connection:  # the records go; the raw copies stay
            for table in ("step_search", "steps", "turns", "actors", "segments", "history", "sessions"):
                connection.execute(f"DELETE FROM {table}")
        connection.close()
        target = rng.randint(1, SESSIONS - 2)
        moment = (
            after(rng.uniform(0.2, 1.0))
            if round_ == 3
            else (lambda target=target: count(db, "SELECT count(*) FROM sessions") >= target)
        )
        killed = kill_when(["reingest", "--all"], env, moment)
        assert killed or round_ == 3, "reingest finished before the moment to kill it"
        assert store_problems(db) == []
        found = read_records(db)
        assert all(found[session_id] == reference[session_id] for session_id in found), "a session half rebuilt"
        assert round_ == 3 or len(found) < SESSIONS
    result = run_postrun("reingest", "--all", env=env)
    assert result.returncode == 0, result.stderr
    assert read_records(db) == reference


def test_kill_during_backup_leaves_the_store_and_never_a_partial_backup(history, tmp_path: Path) -> None:
    env, db, reference = history
    for round_ in range(4):
        target = tmp_path / f"backup-{round_}.db"
        temporary = lambda target=target: any(target.parent.glob(f".{target.name}.*.tmp"))  # noqa: E731
        killed = kill_when(["backup", str(target)], env, temporary if round_ < 3 else after(0.35))
        assert store_problems(db) == [] and read_records(db) == reference
        if round_ < 3:
            assert killed and not target.exists()
        if target.exists():
            assert verify_backup(target).sessions == SESSIONS
    final = tmp_path / "final.db"
    assert run_postrun("backup", str(final), env=env).returncode == 0
    assert read_records(final) == reference


def test_kill_during_restore_leaves_one_whole_store(history, tmp_path: Path) -> None:
    env, db, earlier = history
    backup = tmp_path / "earlier.db"
    assert run_postrun("backup", str(backup), env=env).returncode == 0
    root = tmp_path / "cline" / "sessions"
    with Database.open(db) as database:  # the store moves on after the backup
        ingester = Ingester(database, max_bytes=2**26)
        for index in range(0, SESSIONS, 2):
            session = Synthetic(synthetic_id(index), seed=index)
            for _ in range(45):
                session.grow()
            session.write(root)
            ingester.ingest(SessionLocation.in_root(root, session.session_id))
    later = read_records(db)
    before_restore = Path(f"{db}.before-restore")
    moments: list[Callable[[], bool]] = [
        lambda: any(db.parent.glob(f".{before_restore.name}.*.tmp")),  # copying the current store aside
        lambda: before_restore.exists(),  # copying the backup in
        after(0.5),
    ]
    for number, moment in enumerate(moments):
        before_restore.unlink(missing_ok=True)
        killed = kill_when(["restore", str(backup), "--yes"], env, moment)
        assert killed or number == 2
        assert store_problems(db) == []
        assert read_records(db) in (earlier, later), "the store is a mix of two states"
    result = run_postrun("restore", str(backup), "--yes", env=env)
    assert result.returncode == 0, result.stderr
    assert read_records(db) == earlier
    assert store_problems(db) == []
