"""A mirror that is no longer what this store pushed: a database dropped and created again,
one restored from an older dump, rows changed behind Postrun's back; and a store restored
onto another host, which must never touch the original's rows. Real processes, a real server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import apsw

from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.reliability.kit import Synthetic, install_sitecustomize, synthetic_id
from tests.support import mirror_check
from tests.support.postgres import ADMIN


def ok(*args: str, env: dict[str, str]) -> str:
    result = run_postrun(*args, env=env)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def recorded(root: Path, env: dict[str, str], count: int, first: int = 0) -> list[Synthetic]:
    made = []
    for index in range(first, first + count):
        session = Synthetic(synthetic_id(index), seed=index)
        for _ in range(5):
            session.grow()
        session.write(root)
        made.append(session)
    ok("ingest", str(root), env=env)
    return made


def equal(mirror: Mirror, db: Path) -> list[str]:
    with mirror.server.admin(mirror.database) as admin:
        return mirror_check.differences(db, admin)


def status(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_postrun("mirror", "status", env=env)


def setup(tmp_path: Path, mirror_env: dict[str, str], count: int = 3) -> tuple[dict[str, str], Path, list[Synthetic]]:
    root = tmp_path / "cline"
    env = mirror_env | {"POSTRUN_CLINE_DIR": str(root)}
    made = recorded(root, env, count)
    ok("mirror", "push", env=env)
    assert status(env).returncode == 0
    return env, root, made


def test_a_database_dropped_and_created_again_is_filled_again(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, _, _ = setup(tmp_path, mirror_env)
    with mirror.server.admin(mirror.database) as admin:
        admin.execute("DROP SCHEMA postrun CASCADE")
    dropped = status(env)
    assert dropped.returncode == 1, dropped.stdout  # not "caught up"
    assert "differs: the mirror lacks 3 sessions" in dropped.stdout, dropped.stdout
    pushed = run_postrun("mirror", "push", env=env)
    assert pushed.returncode == 0 and "pushed 3 sessions" in pushed.stdout, pushed.stdout + pushed.stderr
    assert equal(mirror, Path(env["POSTRUN_DB"])) == []
    assert status(env).returncode == 0


def test_a_database_restored_from_an_older_dump_is_brought_up_to_date(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, root, made = setup(tmp_path, mirror_env)
    dump = tmp_path / "mirror.dump"
    tools = mirror.server.bin_dir
    connect = ["-h", "127.0.0.1", "-p", str(mirror.server.port), "-U", ADMIN]
    subprocess.run([str(tools / "pg_dump"), *connect, "-Fc", "-f", str(dump), mirror.database], check=True)
    # After the dump: one session changes, one is new, one is forgotten; all pushed.
    made[0].grow()
    made[0].write(root)
    recorded(root, env, 1, first=3)
    ok("forget", made[1].session_id, "--yes", env=env)
    ok("mirror", "push", env=env)
    assert equal(mirror, Path(env["POSTRUN_DB"])) == []
    restore = [str(tools / "pg_restore"), *connect, "--clean", "--if-exists", "-d", mirror.database, str(dump)]
    subprocess.run(restore, check=True)
    behind = status(env)
    assert behind.returncode == 1, behind.stdout
    assert (
        "differs: the mirror lacks 1 session, holds 1 session otherwise (older, or under other redaction),"
        " holds 1 session forgotten here" in behind.stdout
    ), behind.stdout
    pushed = run_postrun("mirror", "push", env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "note: the mirror lacks 1 session" in pushed.stderr
    assert equal(mirror, Path(env["POSTRUN_DB"])) == []  # the forgotten one is gone again
    assert status(env).returncode == 0


def test_a_store_restored_from_an_older_backup_here_gets_its_history_into_the_mirror(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, root, made = setup(tmp_path, mirror_env, count=1)
    session, db = made[0], Path(env["POSTRUN_DB"])
    backup = tmp_path / "backup.db"
    ok("backup", str(backup), env=env)
    session.edit_earlier()  # after the backup: an earlier version goes to history, and is pushed
    session.write(root)
    ok("ingest", str(root), env=env)
    ok("mirror", "push", env=env)
    ok("restore", str(backup), "--yes", env=env)  # the same host: the same machine id
    # Recorded again before the next push (capture's catch-up after a restore): the restored
    # store's history of the session is its own, under ids the mirror's entries already use.
    session.edit_earlier()
    session.write(root)
    ok("ingest", str(root), env=env)
    ok("mirror", "push", env=env)
    assert equal(mirror, db) == []
    assert status(env).returncode == 0


def test_push_all_sends_every_session_again_whole(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    env, _, made = setup(tmp_path, mirror_env)
    with mirror.server.admin(mirror.database) as admin:  # changed behind Postrun's back, digests kept
        admin.execute("UPDATE postrun.steps SET payload = '{}'::jsonb WHERE session_id = %s", (made[0].session_id,))
    db = Path(env["POSTRUN_DB"])
    assert equal(mirror, db) == [f"{made[0].session_id}: steps differ"]
    assert "pushed 0 sessions" in ok("mirror", "push", env=env)  # the digests say nothing changed
    assert "pushed 3 sessions" in ok("mirror", "push", "--all", env=env)
    assert equal(mirror, db) == []


HOSTNAME_HOOK = "import socket\nsocket.gethostname = lambda: 'another-host'\n"


def machine_id(db: Path) -> str:
    with apsw.Connection(str(db)) as connection:
        return str(connection.execute("SELECT value FROM mirror_state WHERE key = 'machine_id'").get)


def test_a_store_restored_onto_another_host_never_touches_the_originals_rows(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, _, made = setup(tmp_path, mirror_env)
    original = machine_id(Path(env["POSTRUN_DB"]))
    backup = tmp_path / "backup.db"
    ok("backup", str(backup), env=env)
    # The same host restores with the same id.
    ok("restore", str(backup), "--yes", env=env)
    assert machine_id(Path(env["POSTRUN_DB"])) == original
    # Another host gets a new one, and says so.
    other = env | {"POSTRUN_DB": str(tmp_path / "other" / "postrun.db")}
    (tmp_path / "other").mkdir()
    install_sitecustomize(tmp_path / "hooks", HOSTNAME_HOOK, other)
    restored = run_postrun("restore", str(backup), "--yes", env=other)
    assert restored.returncode == 0, restored.stderr
    copy = machine_id(Path(other["POSTRUN_DB"]))
    assert copy != original
    assert f"note: the backup was recorded on {restored_host(env)}, not on this host: new machine id {copy}" in (
        restored.stderr
    )
    # A forget on the copy deletes nothing of the original's from the team server.
    ok("forget", made[0].session_id, "--yes", env=other)
    ok("mirror", "push", env=other)
    with mirror.server.admin(mirror.database) as admin:
        rows = admin.execute(
            "SELECT machine_id, count(*) FROM postrun.sessions GROUP BY machine_id ORDER BY count(*)"
        ).fetchall()
    assert sorted(rows) == sorted([(original, 3), (copy, 2)])
    # Told to, the copy keeps the original's id (it replaces the original).
    kept = env | {"POSTRUN_DB": str(tmp_path / "kept" / "postrun.db")}
    (tmp_path / "kept").mkdir()
    install_sitecustomize(tmp_path / "hooks", HOSTNAME_HOOK, kept)
    ok("restore", str(backup), "--yes", "--keep-machine-id", env=kept)
    assert machine_id(Path(kept["POSTRUN_DB"])) == original


def restored_host(env: dict[str, str]) -> str:
    with apsw.Connection(env["POSTRUN_DB"]) as connection:
        return str(connection.execute("SELECT captured_on FROM sessions LIMIT 1").get)
