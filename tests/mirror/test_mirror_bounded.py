"""A mirror that does not answer in time: `mirror push` and `mirror status` end in one line
and their exit code instead of waiting forever (a lock another PostgreSQL session holds).
Real `postrun` processes, a real PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path

from postrun.mirror.bounded import LOCK_TIMEOUT_SECONDS
from postrun.store import outbox
from postrun.store.db import Database
from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support.capture_process import copy_data

# Well past the bound, well short of forever: the old code was still waiting here.
PATIENCE = LOCK_TIMEOUT_SECONDS + 30


def pushed_store(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """A store pushed once, then a session the mirror holds changed (one session waiting)."""
    root = copy_data("cline-real/e_plan_then_act", tmp_path / "cline")
    env = env | {"POSTRUN_CLINE_DIR": str(root)}
    session = Synthetic(synthetic_id(1), seed=1)
    session.write(root)
    assert run_postrun("capture", "--once", env=env).returncode == 0
    assert run_postrun("mirror", "push", env=env).returncode == 0
    session.grow()
    session.write(root)
    assert run_postrun("capture", "--once", env=env).returncode == 0
    return env


def waiting(env: dict[str, str]) -> int:
    with Database.open_reader(Path(env["POSTRUN_DB"])) as database:
        return outbox.backlog(database).sessions


def test_a_row_lock_held_elsewhere_ends_the_push_in_one_line_and_keeps_the_session_queued(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env = pushed_store(tmp_path, mirror_env)
    with mirror.server.admin(mirror.database) as admin, admin.transaction():
        admin.execute("SELECT 1 FROM postrun.sessions FOR UPDATE")  # every row the push would write
        started = time.monotonic()
        pushed = run_postrun("mirror", "push", env=env, timeout=PATIENCE)
        took = time.monotonic() - started
    assert pushed.returncode == 1, pushed.stdout + pushed.stderr
    lines = pushed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: mirror 127.0.0.1/{mirror.database}: "), lines
    assert "lock" in lines[0] and f"{LOCK_TIMEOUT_SECONDS} s" in lines[0], lines
    assert LOCK_TIMEOUT_SECONDS <= took < PATIENCE
    assert waiting(env) == 1  # nothing marked done: the next push sends it
    again = run_postrun("mirror", "push", env=env)
    assert again.returncode == 0, again.stderr
    assert waiting(env) == 0


def test_a_table_lock_held_elsewhere_ends_status_and_push_in_one_line(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    # What `ALTER TABLE`, `VACUUM FULL` or `LOCK TABLE` in another session holds: even a read waits.
    env = pushed_store(tmp_path, mirror_env)
    with mirror.server.admin(mirror.database) as admin, admin.transaction():
        admin.execute("LOCK TABLE postrun.sessions IN ACCESS EXCLUSIVE MODE")
        status = run_postrun("mirror", "status", env=env, timeout=PATIENCE)
        pushed = run_postrun("mirror", "push", env=env, timeout=PATIENCE)
    assert status.returncode == 1, status.stdout + status.stderr
    assert "server: answered with an error: " in status.stdout and "lock" in status.stdout, status.stdout
    assert pushed.returncode == 1
    assert len(pushed.stderr.strip().splitlines()) == 1 and "lock" in pushed.stderr, pushed.stderr
    assert waiting(env) == 1
