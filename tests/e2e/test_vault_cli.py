"""`postrun raw`, `reingest`, `backup` and `restore`, run as the real executable."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import apsw
import pytest

from postrun.store import codec
from tests.conftest import FIXTURES, isolated_environ, postrun_command, run_postrun
from tests.reliability.kit import Synthetic, read_records, store_problems, synthetic_id
from tests.support.capture_process import CaptureProcess
from tests.support.mounts import in_private_mounts
from tests.support.terminal import on_a_terminal


def ok(*args: str, env: dict[str, str]) -> str:
    result = run_postrun(*args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def refused(*args: str, env: dict[str, str], code: int) -> str:
    result = run_postrun(*args, env=env)
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def delete_records(db: Path, session_id: str) -> None:
    connection = apsw.Connection(str(db))
    codec.register(connection)  # the search index reads a step's text through them to unindex it
    with connection:
        rowids = [row[0] for row in connection.execute("SELECT rowid FROM steps WHERE session_id = ?", (session_id,))]
        connection.executemany("DELETE FROM step_search WHERE rowid = ?", [(r,) for r in rowids])
        for table in ("steps", "turns", "actors", "segments", "history"):
            connection.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
        connection.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    connection.close()


def ingested(index: int, root: Path, env: dict[str, str]) -> Synthetic:
    """A small synthetic session written into ``root`` and ingested by id."""
    session = Synthetic(synthetic_id(index), seed=index)
    session.write(root)
    ok("ingest", session.session_id, env=env)
    return session


@pytest.fixture
def cline_root(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".cline" / "data" / "sessions"


def test_a_restored_then_deleted_session_is_handed_back_and_rebuilt(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    session = Synthetic(synthetic_id(1), seed=1)
    for _ in range(10):
        session.grow()
    session.write(cline_root)
    folder = cline_root / session.session_id
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    ok("ingest", session.session_id, env=env)
    session.restore()  # a checkpoint restore: later messages removed
    session.write(cline_root)
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    ok("ingest", session.session_id, env=env)
    exported = ok("export", session.session_id, env=env)
    history = ok("show", "--history", session.session_id, env=env)
    assert "raw copies  2 versions" in history and "version 1" in history
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()

    for number, expected in ((1, before), (2, after)):
        out = tmp_path / f"v{number}"
        line = ok("raw", session.session_id[:8], "--version", str(number), "--to", str(out), env=env)
        assert line.startswith(f"wrote version {number} of 2 (2 files")
        written = out / "sessions" / session.session_id
        assert {p.name: p.read_bytes() for p in written.iterdir()} == expected
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in written.iterdir())

    db = Path(env["POSTRUN_DB"])
    delete_records(db, session.session_id)
    assert "reingested 1 session from raw copies: 1 changed" in ok("reingest", session.session_id, env=env)
    assert ok("export", session.session_id, env=env) == exported
    assert "reingested 1 session from raw copies: 0 changed, 1 unchanged" in ok("reingest", "--all", env=env)


def test_what_raw_writes_is_what_ingest_takes(env: dict[str, str], cline_root: Path, tmp_path: Path) -> None:
    session = ingested(3, cline_root, env)
    exported = ok("export", session.session_id, env=env)
    out = tmp_path / "restored"
    ok("raw", session.session_id, "--to", str(out), env=env)
    elsewhere = env | {"POSTRUN_DB": str(tmp_path / "elsewhere.db")}
    taken = run_postrun("ingest", str(out), env=elsewhere)  # the folder raw wrote, as it is
    assert taken.returncode == 0, taken.stdout + taken.stderr
    assert "no sessions found" not in taken.stderr
    again = json.loads(ok("export", session.session_id, env=elsewhere))
    assert again["steps"] == json.loads(exported)["steps"]  # the same records, read from another folder


def test_raw_never_writes_into_clines_folder_nor_into_a_non_empty_folder(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    session = ingested(2, cline_root, env)
    listing = sorted(p for p in cline_root.parent.rglob("*"))
    for inside in (cline_root / "restored", cline_root.parent / "x", cline_root / session.session_id):
        assert "Postrun never writes there" in refused("raw", session.session_id, "--to", str(inside), env=env, code=2)
    link = tmp_path / "link"
    link.symlink_to(cline_root)
    assert "Postrun never writes there" in refused("raw", session.session_id, "--to", str(link / "y"), env=env, code=2)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "note.txt").write_text("mine")
    assert "not an empty folder" in refused("raw", session.session_id, "--to", str(busy), env=env, code=2)
    assert sorted(p for p in cline_root.parent.rglob("*")) == listing
    assert (busy / "note.txt").read_text() == "mine" and len(list(busy.iterdir())) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ok("raw", session.session_id, "--to", str(empty), env=env).startswith("wrote version 1 of 1")


def test_keep_raw_false_keeps_no_copies(env: dict[str, str], cline_root: Path, tmp_path: Path) -> None:
    session = Synthetic(synthetic_id(3), seed=3)
    session.write(cline_root)
    ok("ingest", session.session_id, env=dict(env, POSTRUN_KEEP_RAW="false"))
    assert "no raw copies kept" in refused("raw", session.session_id, "--to", str(tmp_path / "o"), env=env, code=1)
    assert "no raw copies kept" in refused("reingest", session.session_id, env=env, code=1)


def test_backup_and_restore_round_trip_and_refuse_bad_files(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    db = Path(env["POSTRUN_DB"])
    sessions = [Synthetic(synthetic_id(i), seed=i) for i in range(3)]
    for session in sessions:
        session.grow()
        session.write(cline_root)
    ok("ingest", str(cline_root), env=env)
    backup = tmp_path / "b" / "one.db"
    backup.parent.mkdir()
    line = ok("backup", str(backup), env=env)
    steps = sum(len(records.steps) for records in read_records(db).values())
    assert line.startswith(f"backup {backup}: ") and line.rstrip().endswith(f"3 sessions, {steps} steps, integrity ok")
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert "already exists" in refused("backup", str(backup), env=env, code=1)
    backed_up = read_records(db)

    for session in sessions:
        session.grow()
        session.write(cline_root)
    ok("ingest", str(cline_root), env=env)
    current = read_records(db)
    assert current != backed_up

    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(backup.read_bytes()[: backup.stat().st_size // 2])
    mangled = tmp_path / "mangled.db"
    data = bytearray(backup.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)
    mangled.write_bytes(bytes(data))
    other = tmp_path / "other.db"
    other.write_bytes(b"not a database at all" * 300)
    for bad, problem in ((truncated, "truncated"), (mangled, "not a usable backup"), (other, "not a SQLite database")):
        line = refused("restore", str(bad), "--yes", env=env, code=1)
        assert line.startswith(f"error: {bad}: ") and problem in line, line
    assert read_records(db) == current
    assert "confirm with --yes" in refused("restore", str(backup), env=env, code=2)

    line = ok("restore", str(backup), "--yes", env=env)
    assert f"the previous store is {db}.before-restore" in line
    assert read_records(db) == backed_up
    assert read_records(Path(f"{db}.before-restore")) == current
    assert store_problems(db) == []
    ok("ingest", str(cline_root), env=env)  # the restored store is a working store
    assert read_records(db) == current


def answered_on_a_terminal(typed: str, *args: str, env: dict[str, str]) -> tuple[int, str]:
    """`postrun ARGS` with its stdin and stderr a terminal, ``typed`` typed at its prompt (a line
    with Enter, or Ctrl-D): its exit status and what the terminal showed."""
    finished, shown = on_a_terminal(
        lambda terminal: subprocess.run(
            [*postrun_command(), *args], env=env, stdin=terminal, stderr=terminal, stdout=subprocess.PIPE, timeout=60
        ),
        typed.encode(),
    )
    return finished.returncode, shown.decode(errors="replace")


def test_restore_asks_on_a_terminal_and_a_no_leaves_the_store_as_it_was(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    # Before: a "no" was typer's bare "Aborted!", naming neither the command nor the store.
    db = Path(env["POSTRUN_DB"])
    first = ingested(0, cline_root, env)
    backup = tmp_path / "one.db"
    ok("backup", str(backup), env=env)
    ingested(1, cline_root, env)
    current = read_records(db)
    code, shown = answered_on_a_terminal("n\n", "restore", str(backup), env=env)
    assert code == 1, shown
    assert f"Replace {db} with {backup} (1 session)?" in shown
    assert f"not restored: {db} is unchanged" in shown and "Aborted" not in shown, shown
    assert read_records(db) == current
    assert not Path(f"{db}.before-restore").exists()
    # Ctrl-D at the question was typer's bare "Aborted!" too: it is a no.
    code, shown = answered_on_a_terminal("\x04", "restore", str(backup), env=env)
    assert code == 1, shown
    assert f"not restored: {db} is unchanged" in shown and "Aborted" not in shown, shown
    assert read_records(db) == current
    code, shown = answered_on_a_terminal("y\n", "restore", str(backup), env=env)
    assert code == 0, shown
    assert set(read_records(db)) == {first.session_id}


def test_a_backup_removes_what_a_killed_backup_left_and_keeps_a_running_ones(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    # Before: a backup killed mid-copy (the machine shut down during the daily one) left a hidden
    # copy of the whole store beside its target for ever; the daily rotation never saw it.
    ingested(0, cline_root, env)
    gone = subprocess.Popen(["true"])
    gone.wait()
    daily = Path(env["POSTRUN_DB"]).parent / "backups"
    daily.mkdir()
    chosen = tmp_path / "mine.db"
    abandoned = [daily / f".postrun-20260101T000000Z.db.{gone.pid}.0.tmp", tmp_path / f".mine.db.{gone.pid}.3.tmp"]
    abandoned.append(Path(f"{abandoned[1]}-journal"))
    kept = [
        daily / f".postrun-20260101T000000Z.db.{os.getpid()}.0.tmp",  # a running process's
        tmp_path / f".mine.db.{os.getpid()}.0.tmp",
        tmp_path / f".other.db.{gone.pid}.0.tmp",  # another target's: not this backup's to judge
        tmp_path / ".mine.db.99999999999.0.tmp",  # no process can have that number
        tmp_path / ".mine.db.\u0669\u0669.0.tmp",  # not digits a process id is written with
    ]
    for path in [*abandoned, *kept]:
        path.write_bytes(b"half a copy")
        os.utime(path, (time.time() - 7200, time.time() - 7200))
    fresh = daily / f".postrun-20260101T000000Z.db.{gone.pid}.1.tmp"  # a process this one cannot see may write it
    fresh.write_bytes(b"a copy under way")
    kept.append(fresh)
    ok("backup", env=env)
    ok("backup", str(chosen), env=env)
    assert [path for path in abandoned if path.exists()] == []
    assert [path for path in kept if not path.exists()] == []
    assert chosen.exists() and len(list(daily.glob("postrun-*.db"))) == 1


def test_a_backup_restores_onto_a_fresh_home(env: dict[str, str], cline_root: Path, tmp_path: Path) -> None:
    """A new machine has no store folder yet: restore creates it (0700) instead of failing
    on the capture lock inside it."""
    ingested(10, cline_root, env)
    backup = tmp_path / "b.db"
    ok("backup", str(backup), env=env)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    new_env = isolated_environ(fresh)
    db = Path(new_env["POSTRUN_DB"])
    assert not db.parent.exists()
    line = ok("restore", str(backup), "--yes", env=new_env)
    assert line.startswith(f"restored {backup} into {db}: 1 session") and "previous store" not in line, line
    assert read_records(db) == read_records(backup)
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700 and stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_backup_of_a_newer_postrun_is_refused_with_exit_78(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    """README, Exit codes: 78 for "a store ... written by a newer Postrun"; a backup is one."""
    from postrun.store.db import STORE_VERSION

    db = Path(env["POSTRUN_DB"])
    ingested(9, cline_root, env)
    backup = tmp_path / "newer.db"
    ok("backup", str(backup), env=env)
    connection = apsw.Connection(str(backup))
    connection.execute(f"pragma user_version={STORE_VERSION + 1}")
    connection.close()
    before = read_records(db)
    line = refused("restore", str(backup), "--yes", env=env, code=78)
    assert line.startswith(f"error: {backup}: written by a newer Postrun"), line
    assert read_records(db) == before and not Path(f"{db}.before-restore").exists()


def test_restoring_the_before_restore_file_undoes_the_restore(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    """README: restore "keeps the current store as `<db>.before-restore`"; restoring that file
    (the undo) once copied the current store over it first, and lost what it held."""
    db = Path(env["POSTRUN_DB"])
    ingested(7, cline_root, env)
    backup = tmp_path / "one.db"
    ok("backup", str(backup), env=env)
    ingested(8, cline_root, env)
    newer = read_records(db)
    ok("restore", str(backup), "--yes", env=env)
    older = read_records(db)
    assert older != newer
    ok("restore", f"{db}.before-restore", "--yes", env=env)
    assert read_records(db) == newer
    assert read_records(Path(f"{db}.before-restore")) == older  # and undoing it again stays possible
    assert store_problems(db) == []
    assert [path.name for path in db.parent.iterdir() if path.name.endswith(".tmp")] == []


def test_a_live_stores_copy_with_its_write_ahead_log_is_refused_not_restored_short(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    """README: restore "checks the backup first (a truncated, corrupted or foreign file is
    refused with one line and nothing changes)". A store's files copied while a capture held it
    (or from a file-level backup of the data folder) keep their newest commits in `-wal`; the
    restore read the file alone and silently dropped them, though `--db FILE sessions` showed them."""
    db = Path(env["POSTRUN_DB"])
    ingested(11, cline_root, env)
    holder = apsw.Connection(str(db))  # as a running capture: the next writer's commits stay in the WAL
    try:
        assert holder.execute("SELECT count(*) FROM sessions").get == 1  # it has the store open
        ingested(12, cline_root, env)
        copy = tmp_path / "copied" / "postrun.db"
        copy.parent.mkdir()
        for suffix in ("", "-wal"):
            copy.with_name(copy.name + suffix).write_bytes(Path(f"{db}{suffix}").read_bytes())
    finally:
        holder.close()
    assert Path(f"{copy}-wal").stat().st_size > 0
    assert len(ok("--db", str(copy), "sessions", env=env).splitlines()) == 2

    (tmp_path / "elsewhere").mkdir()
    elsewhere = isolated_environ(tmp_path / "elsewhere")
    line = refused("restore", str(copy), "--yes", env=elsewhere, code=1)
    assert line.startswith(f"error: {copy}: not a backup: its write-ahead log") and "backup NEW.db" in line, line
    assert not Path(elsewhere["POSTRUN_DB"]).exists()

    made = tmp_path / "made.db"
    ok("--db", str(copy), "backup", str(made), env=env)  # the way out the line names
    assert "2 sessions" in ok("restore", str(made), "--yes", env=elsewhere)


ON_A_READ_ONLY_DISK = """
mount -t tmpfs -o size=8m tmpfs "$DISK" || exit 90
"$@" ingest "$SESSIONS" >/dev/null || exit 91
mount -o remount,ro "$DISK" || exit 92
"$@" sessions; echo "rc=$?"
"$@" backup "$RESCUE"; echo "rc=$?"
"""


def test_a_store_on_a_read_only_disk_is_read_and_backed_up(env: dict[str, str], tmp_path: Path) -> None:
    """README: reading commands open the store read-only, and `postrun backup FILE` copies it.
    On a read-only file system (a disk the kernel remounted read-only after errors, an old disk
    mounted to rescue it) SQLite cannot create the `-shm` a WAL store's reader needs: every
    reading command and the backup that would rescue the store failed with "permission denied
    or not writable". A real read-only tmpfs, in a mount namespace of the test's own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    rescue = tmp_path / "rescue.db"
    sessions = FIXTURES / "cline" / "basic_act" / "data" / "sessions"
    env.update(DISK=str(disk), POSTRUN_DB=str(disk / "postrun.db"), SESSIONS=str(sessions), RESCUE=str(rescue))
    run = in_private_mounts(ON_A_READ_ONLY_DISK, env)
    assert run.returncode == 0, run.stdout + run.stderr
    listed, _, backed_up = run.stdout.partition("rc=")
    assert "1790000000000_basic" in listed and backed_up.startswith("0\n"), run.stdout + run.stderr
    assert backed_up.endswith("1 session, 15 steps, integrity ok\nrc=0\n"), run.stdout + run.stderr
    assert "1790000000000_basic" in ok("--db", str(rescue), "sessions", env=env)


ON_A_DISK_A_KILLED_BACKUP_FILLED = """
mount -t tmpfs -o size=8m tmpfs "$DISK" || exit 90
"$@" ingest "$SESSIONS" >/dev/null || exit 91
mkdir -m 700 "$DISK/backups" || exit 92
left="$DISK/backups/.postrun-20260101T000000Z.db.$DEAD.0.tmp"
cat /dev/zero > "$left" 2>/dev/null  # until the disk is full
touch -d '2 hours ago' "$left" || exit 93
"$@" backup; echo "rc=$?"
ls -A "$DISK/backups"
"""


def test_a_daily_backup_first_removes_the_copy_a_killed_one_left_on_a_full_disk(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The copy a killed daily backup left may be what fills the disk: it is removed before the
    next daily backup is written, not after it (which then never came). A real 8 MB tmpfs."""
    disk = tmp_path / "disk"
    disk.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    sessions = FIXTURES / "cline" / "basic_act" / "data" / "sessions"
    env.update(DISK=str(disk), POSTRUN_DB=str(disk / "postrun.db"), SESSIONS=str(sessions), DEAD=str(gone.pid))
    run = in_private_mounts(ON_A_DISK_A_KILLED_BACKUP_FILLED, env)
    made, _, listed = run.stdout.partition("rc=")
    assert listed.startswith("0\n"), run.stdout + run.stderr
    assert made.startswith("backup ") and made.rstrip().endswith("integrity ok"), run.stdout + run.stderr
    assert [name for name in listed.split()[1:] if name.startswith(".")] == [], run.stdout


def test_restore_is_refused_while_capture_holds_the_store(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    ingested(4, cline_root, env)
    backup = tmp_path / "b.db"
    ok("backup", str(backup), env=env)
    capture = CaptureProcess(dict(env, POSTRUN_CLINE_DIR=str(cline_root)), tmp_path)
    try:
        capture.wait_for_log(r"watching")
        line = refused("restore", str(backup), "--yes", env=env, code=75)
        assert "another capture is running" in line and "stop it before restoring" in line
    finally:
        capture.kill()


def test_daily_backups_keep_the_newest(env: dict[str, str], cline_root: Path) -> None:
    ingested(5, cline_root, env)
    folder = Path(env["POSTRUN_DB"]).parent / "backups"
    old = [folder / f"postrun-2026010{day}T030000Z.db" for day in (1, 2, 3)]
    folder.mkdir()
    for path in old:
        path.write_bytes(b"")
    mine = folder / "keep-me.db"
    mine.write_bytes(b"x")
    result = run_postrun("backup", "--keep", "2", env=env)
    assert result.returncode == 0, result.stderr
    made = sorted(p for p in folder.iterdir() if p.name.startswith("postrun-"))
    assert made[0] == old[2] and len(made) == 2 and made[1].stat().st_size > 0
    assert result.stderr.count("removed old backup") == 2
    assert mine.exists()
    assert os.access(made[1], os.R_OK)


def raw_rows(db: Path) -> int:
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(connection.execute("SELECT count(*) FROM raw_files").get)
    finally:
        connection.close()


def test_capture_keeps_raw_copies_unless_keep_raw_is_off(env: dict[str, str], cline_root: Path) -> None:
    env = dict(env, POSTRUN_CLINE_DIR=str(cline_root))
    session = Synthetic(synthetic_id(6), seed=6)
    session.write(cline_root)
    ok("capture", "--once", env=dict(env, POSTRUN_KEEP_RAW="false"))
    db = Path(env["POSTRUN_DB"])
    assert read_records(db) and raw_rows(db) == 0
    session.grow()
    session.write(cline_root)
    ok("capture", "--once", env=env)
    assert raw_rows(db) == 2


def version(index: int, number: int) -> Synthetic:
    """Version ``number`` of synthetic session ``index``: each one has more messages."""
    session = Synthetic(synthetic_id(index), seed=index)
    for _ in range(6 + 6 * number):
        session.grow()
    return session


def test_backups_taken_while_capture_ingests_hold_stored_versions_only(
    env: dict[str, str], cline_root: Path, tmp_path: Path
) -> None:
    from postrun.agents.cline import SessionLocation
    from postrun.ingest.ingester import Ingester
    from postrun.store.backup import verify_backup
    from postrun.store.db import Database

    indexes, versions = range(6), range(5)
    expected: dict[int, list[object]] = {index: [] for index in indexes}
    for number in versions:  # what each version stores, ingested from the same paths
        with Database.open(tmp_path / f"reference-{number}.db") as database:
            ingester = Ingester(database, max_bytes=2**26)
            for index in indexes:
                version(index, number).write(cline_root)
                ingester.ingest(SessionLocation.in_root(cline_root, synthetic_id(index)))
        for index in indexes:
            expected[index].append(read_records(tmp_path / f"reference-{number}.db")[synthetic_id(index)])
    for index in indexes:
        version(index, 0).write(cline_root)
    env = dict(env, POSTRUN_CLINE_DIR=str(cline_root), POSTRUN_DEBOUNCE_SECONDS="0.05")
    capture = CaptureProcess(env, tmp_path)
    backups = []
    try:
        capture.wait_for_log(r"watching")
        for number in versions[1:]:
            for index in indexes:
                version(index, number).write(cline_root)
            backups.append(tmp_path / f"backup-{number}.db")
            ok("backup", str(backups[-1]), env=env)
    finally:
        capture.kill()
    for backup in backups:
        assert verify_backup(backup).sessions <= len(indexes)
        for session_id, records in read_records(backup).items():
            index = indexes[[synthetic_id(i) for i in indexes].index(session_id)]
            assert records in expected[index], f"{backup.name}: {session_id} is no version it ever had"
