"""The real `postrun capture` process feeding a real PostgreSQL, and the faults it must ride out.

Every test ends with PostgreSQL holding exactly what the store holds, session by session,
record by record (tests/support/mirror_check.py). A batch is caught "in the middle" by
holding a row lock on one of the rows it must write: the push then waits inside its
PostgreSQL transaction, as a slow server would, and pg_stat_activity shows it waiting.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support import mirror_check
from tests.support.capture_process import CaptureProcess, copy_data, wait_until
from tests.support.postgres import APP_USER

FAST = {"POSTRUN_DEBOUNCE_SECONDS": "0.1", "POSTRUN_POLL_SECONDS": "0.5"}


def sessions(root: Path, count: int, steps: int = 10, first: int = 0) -> list[Synthetic]:
    made = []
    for index in range(first, first + count):
        session = Synthetic(synthetic_id(index), seed=index)
        for _ in range(steps):
            session.grow()
        session.write(root)
        made.append(session)
    return made


def equal(mirror: Mirror, db: Path) -> bool:
    with mirror.server.admin(mirror.database) as admin:
        return mirror_check.differences(db, admin) == []


def wait_equal(capture: CaptureProcess, mirror: Mirror, db: Path, timeout: float = 60) -> None:
    def check() -> bool:
        try:
            return equal(mirror, db)
        except psycopg.Error:
            return False

    try:
        capture.wait_until(check, what="PostgreSQL to equal the store", timeout=timeout)
    except AssertionError:
        with mirror.server.admin(mirror.database) as admin:
            raise AssertionError(f"{mirror_check.differences(db, admin)}\n{capture.log()[-4000:]}") from None


def grow_all(made: list[Synthetic], root: Path) -> None:
    for session in made:
        session.grow()
        session.write(root)


@contextmanager
def a_push_held_mid_batch(mirror: Mirror, made: list[Synthetic], root: Path) -> Iterator[None]:
    """Lock the last session's mirror row, change every session; yields once the push of
    those changes waits on the lock inside its transaction."""
    with mirror.server.admin(mirror.database) as admin:
        admin.execute("BEGIN")
        admin.execute("SELECT 1 FROM postrun.sessions WHERE session_id = %s FOR UPDATE", (made[-1].session_id,))
        grow_all(made, root)

        with mirror.server.admin() as observer:  # activity is read outside the lock's transaction

            def waiting() -> bool:
                row = observer.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'",
                    (APP_USER,),
                ).fetchone()
                return row is not None and row[0] > 0

            wait_until(waiting, what="a push waiting inside its batch", timeout=30)
        yield
        with contextlib.suppress(psycopg.Error):  # the test may have killed the server meanwhile
            admin.execute("ROLLBACK")


def start(env: dict[str, str], tmp_path: Path, root: Path) -> CaptureProcess:
    return CaptureProcess(env | FAST | {"POSTRUN_CLINE_DIR": str(root)}, tmp_path)


def test_capture_mirrors_the_fixtures_and_every_later_change(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    root = copy_data("cline-real/b_run_commands", tmp_path / "cline")
    made = sessions(root, 3)
    capture = start(mirror_env, tmp_path, root)
    try:
        capture.wait_for_log(rf"mirror 127\.0\.0\.1/{mirror.database}: caught up")
        db = Path(mirror_env["POSTRUN_DB"])
        wait_equal(capture, mirror, db)
        # Record by record against what `postrun export` prints for each session.
        with mirror.server.admin(mirror.database) as admin:
            mirrored = mirror_check.mirror_sessions(admin, mirror_check.machine_id(db))
        for session_id, found in mirrored.items():
            exported = run_postrun("export", session_id, "--format", "json", env=mirror_env)
            assert json.loads(exported.stdout) == found["envelope"]
        for session in made:
            session.grow()
            session.edit_earlier()
            session.write(root)
        wait_equal(capture, mirror, db)
        assert capture.lines(r" (ERROR|WARNING) ") == []
        code, elapsed = capture.stop(signal.SIGTERM)
        assert code == 0 and elapsed < 5
    finally:
        capture.kill()


def test_the_server_away_for_30_seconds_while_sessions_change(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    root = tmp_path / "cline"
    made = sessions(root, 5)
    capture = start(mirror_env, tmp_path, root)
    db = Path(mirror_env["POSTRUN_DB"])
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        mirror.server.stop("fast")
        stopped = time.monotonic()
        changed = 0
        while time.monotonic() - stopped < 30:
            for session in made:
                session.grow()
                session.write(root)
            changed += 1
            time.sleep(1.0)  # the sessions' own pace while the server is away, not a wait
            capture_alive = capture.process.poll() is None
            assert capture_alive
        # Recording went on: the store has every change, the mirror does not.
        lines = capture.wait_for_log(r"ERROR mirror 127\.0\.0\.1/.*: Connection refused; \d+ sessions? waiting")
        assert len(lines) == 1, lines  # one line for the outage, not one per retry
        ingests = capture.lines(r"cline updated .* on (event|poll)")
        assert len(ingests) >= changed
        mirror.server.start()
        capture.wait_for_log(r"mirror .*: caught up", count=2, timeout=90)
        wait_equal(capture, mirror, db)
    finally:
        capture.kill()


def test_the_server_killed_in_the_middle_of_a_batch(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    root = tmp_path / "cline"
    made = sessions(root, 20)
    capture = start(mirror_env, tmp_path, root)
    db = Path(mirror_env["POSTRUN_DB"])
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        with a_push_held_mid_batch(mirror, made, root):
            mirror.server.stop("immediate")
        mirror.server.start()
        wait_equal(capture, mirror, db, timeout=90)
    finally:
        capture.kill()


def test_capture_killed_in_the_middle_of_a_push(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    root = tmp_path / "cline"
    made = sessions(root, 20)
    capture = start(mirror_env, tmp_path, root)
    db = Path(mirror_env["POSTRUN_DB"])
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        with a_push_held_mid_batch(mirror, made, root):
            capture.process.send_signal(signal.SIGKILL)
            capture.process.wait(10)
        assert not equal(mirror, db)  # the batch was cut off: nothing of it was committed
        again = start(mirror_env, tmp_path, root)
        try:
            wait_equal(again, mirror, db)
        finally:
            again.kill()
    finally:
        capture.kill()


def test_every_backend_terminated_repeatedly_under_load(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    root = tmp_path / "cline"
    made = sessions(root, 10)
    capture = start(mirror_env, tmp_path, root)
    db = Path(mirror_env["POSTRUN_DB"])
    stop = threading.Event()

    def write_forever() -> None:
        while not stop.is_set():
            for session in made:
                session.grow()
                session.write(root)
            stop.wait(0.2)  # the writers' rhythm

    writer = threading.Thread(target=write_forever, name="writer")
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        writer.start()
        terminated = 0
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            terminated += mirror.server.terminate_app_backends()
            time.sleep(0.3)  # the rhythm of the terminations, not a wait
        stop.set()
        writer.join(10)
        assert terminated >= 3, "the pusher was hardly ever connected"
        wait_equal(capture, mirror, db, timeout=90)
        assert capture.lines(r"Traceback|internal error") == []
    finally:
        stop.set()
        capture.kill()


def test_a_wrong_password_then_the_right_one(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    root = tmp_path / "cline"
    sessions(root, 3)
    passfile = Path(mirror_env["PGPASSFILE"])
    mirror.server.write_passfile(passfile, "not-the-password-x7")
    capture = start(mirror_env, tmp_path, root)
    db = Path(mirror_env["POSTRUN_DB"])
    try:
        capture.wait_for_log(rf'ERROR mirror .*: password authentication failed for user "{APP_USER}"; 3 sessions')
        assert "not-the-password-x7" not in capture.log()
        mirror.server.write_passfile(passfile)
        capture.wait_for_log(r"mirror .*: caught up", timeout=60)
        wait_equal(capture, mirror, db)
    finally:
        capture.kill()


def test_a_read_only_server(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    root = tmp_path / "cline"
    made = sessions(root, 3)
    capture = start(mirror_env, tmp_path, root)
    db = Path(mirror_env["POSTRUN_DB"])
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        with mirror.server.admin() as admin:
            admin.execute(f"ALTER DATABASE {mirror.database} SET default_transaction_read_only = on")
        mirror.server.terminate_app_backends()
        for session in made:
            session.grow()
            session.write(root)
        capture.wait_for_log(r"ERROR mirror .*: cannot execute INSERT in a read-only transaction; 3 sessions waiting")
        with mirror.server.admin() as admin:
            admin.execute(f"ALTER DATABASE {mirror.database} RESET default_transaction_read_only")
        capture.wait_for_log(r"mirror .*: caught up", count=2, timeout=60)
        wait_equal(capture, mirror, db)
    finally:
        capture.kill()
