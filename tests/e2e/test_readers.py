"""The real `postrun`: every command and page that only reads leaves the store as it found it.

A backup (a rollback-journal file), a store from an older Postrun and a store that does not
exist: reading one never switches it to WAL, migrates it, changes its mode or creates a file.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from postrun.store.db import STORE_VERSION
from tests.conftest import FIXTURES, run_postrun
from tests.support.builders import mapped_session, message_step
from tests.support.old_store import write_old_store
from tests.support.web import ServeProcess, request, sign_in

SESSION = "1790000000000_basic"
UPGRADE = "run postrun capture or postrun ingest once to upgrade it"


def snapshot(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry of ``folder``: the hash of its content, its mode and its mtime."""
    return {
        path.name: (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode, path.stat().st_mtime_ns)
        for path in sorted(folder.iterdir())
    }


def reading_commands(out: Path) -> list[tuple[str, ...]]:
    return [
        ("sessions",),
        ("sessions", "--json"),
        ("show", SESSION),
        ("show", "--history", "--redact", SESSION),
        ("export", SESSION),
        ("export", "--format", "html", SESSION),
        ("search", "off-by-one"),
        ("search", "--flag", "any"),
        ("status",),
        ("doctor",),
        ("raw", SESSION, "--to", str(out)),
    ]


@pytest.fixture
def backup(tmp_path: Path, env: dict[str, str]) -> Path:
    """A backup made by `postrun backup` of a store holding the basic fixture, alone in its folder (0644)."""
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    assert run_postrun("ingest", str(root), env=env).returncode == 0
    target = tmp_path / "backups" / "one.db"
    target.parent.mkdir()
    assert run_postrun("backup", str(target), env=env).returncode == 0
    target.chmod(0o644)
    return target


def test_reading_a_backup_leaves_it_byte_for_byte_as_it_was(backup: Path, env: dict[str, str], tmp_path: Path) -> None:
    before = snapshot(backup.parent)
    assert list(before) == [backup.name]
    for number, command in enumerate(reading_commands(tmp_path / "raw")):
        if command[0] == "raw":
            command = (*command[:-1], f"{command[-1]}{number}")
        result = run_postrun("--db", str(backup), *command, env=env)
        # status: 3 (no capture is running); doctor: 1 (Cline's folder is not there)
        assert result.returncode == {"status": 3, "doctor": 1}.get(command[0], 0), (command, result.stderr)
        assert "error: " not in result.stderr or command == ("doctor",), (command, result.stderr)
        assert snapshot(backup.parent) == before, command
    shown = run_postrun("--db", str(backup), "show", SESSION, env=env)
    assert shown.returncode == 0 and "off-by-one" in shown.stdout  # it did read the backup


def test_the_review_app_s_pages_read_a_backup_without_changing_it(
    backup: Path, env: dict[str, str], tmp_path: Path
) -> None:
    env["POSTRUN_DB"] = str(backup)
    before = snapshot(backup.parent)
    server = ServeProcess(env, tmp_path)
    try:
        cookie = sign_in(server)
        for path in ("/", f"/s/{SESSION}", "/search?q=off-by-one", "/files", "/activity", f"/s/{SESSION}/export.json"):
            answer = request(server.port, path, cookie=cookie)
            if answer.status == 303:  # /files goes to the first workspace's page
                answer = request(server.port, answer.headers["location"], cookie=cookie)
            assert answer.status == 200, (path, answer.status, answer.body[:300])
        assert snapshot(backup.parent) == before
        page = request(server.port, f"/s/{SESSION}", cookie=cookie)
        csrf = page.body.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        saved = request(
            server.port,
            f"/s/{SESSION}/verdict",
            method="POST",
            cookie=cookie,
            body=f"csrf={csrf}&state=looks_good&note=",
            headers={"Origin": f"http://127.0.0.1:{server.port}"},
        )
        assert saved.status == 303, saved  # a verdict is written: the one action that writes
    finally:
        server.stop()
    listed = run_postrun("sessions", "--verdict", "looks_good", env=env)
    assert SESSION in listed.stdout, listed.stderr


def test_a_reader_of_an_older_store_says_how_to_upgrade_it_and_leaves_it(env: dict[str, str], tmp_path: Path) -> None:
    old = tmp_path / "old" / "postrun.db"
    old.parent.mkdir()
    write_old_store(old, [mapped_session([message_step(0, "hello from an old store", role="user")])], version=2)
    before = snapshot(old.parent)
    expected = (
        f"error: {old}: written by an older Postrun (store version 2, this Postrun reads version"
        f" {STORE_VERSION}); {UPGRADE}\n"
    )
    for command in reading_commands(tmp_path / "raw"):
        if command == ("doctor",):
            continue  # doctor reports it as one of its checks (below)
        result = run_postrun("--db", str(old), *command, env=env)
        assert (result.returncode, result.stderr) == (78, expected), command
        assert snapshot(old.parent) == before, command
    doctor = run_postrun("--db", str(old), "doctor", env=env)
    assert f"written by an older Postrun (store version 2, this Postrun reads version {STORE_VERSION})" in (
        doctor.stdout
    ), doctor.stdout
    assert snapshot(old.parent) == before
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    assert run_postrun("--db", str(old), "ingest", str(root), env=env).returncode == 0  # a writer upgrades it
    listed = run_postrun("--db", str(old), "sessions", env=env)
    assert listed.returncode == 0 and "hello from an old store" in listed.stdout, listed.stderr


def test_readers_of_a_store_that_does_not_exist_say_so_and_create_nothing(env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "postrun.db"
    expected = {
        ("sessions",): (0, f"no sessions stored in {missing}\n"),
        ("show", SESSION): (1, f"error: no session {SESSION} in {missing}\n"),
        ("export", SESSION): (1, f"error: no session {SESSION} in {missing}\n"),
        ("search", "off-by-one"): (0, f"no sessions stored in {missing}\n"),
        ("search", "--flag", "any"): (0, f"no sessions stored in {missing}\n"),
    }
    for command, (code, stderr) in expected.items():
        result = run_postrun("--db", str(missing), *command, env=env)
        assert (result.returncode, result.stderr) == (code, stderr), command
    raw = run_postrun("--db", str(missing), "raw", SESSION, "--to", str(tmp_path / "out"), env=env)
    assert raw.returncode == 1 and raw.stderr.count("\n") == 1 and str(missing) in raw.stderr, raw.stderr
    status = run_postrun("--db", str(missing), "status", env=env)
    assert f"store: {missing} (not created yet)" in status.stdout
    doctor = run_postrun("--db", str(missing), "doctor", env=env)
    assert f"no store yet at {missing}" in doctor.stdout
    assert not missing.parent.exists() and not (tmp_path / "out").exists()
