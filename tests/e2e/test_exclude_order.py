"""An excluded session is never kept, whatever order its files appear in.

Cline writes a session's transcript before its manifest (which names the workspace) at times:
stored then with an unknown workspace, it is removed as a forget removes it once the manifest
shows it excluded, through `postrun ingest` and through a capture. A session stored with its
workspace known, before the pattern was added, is the user's record: kept as it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import pytest

from tests.conftest import run_postrun
from tests.support import forensic
from tests.support.capture_process import copy_data, read_store

SESSION = "1790000100000_review"


def stored_without_manifest(env: dict[str, str], tmp_path: Path, exclude: str) -> tuple[Path, Path]:
    root = copy_data("cline/review_flags", tmp_path / "data")
    manifest = root / SESSION / f"{SESSION}.json"
    aside = tmp_path / "manifest.json"
    shutil.move(manifest, aside)
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_EXCLUDE=exclude)
    done = run_postrun("ingest", str(root / SESSION), env=env)
    assert done.returncode == 0, done.stderr
    assert SESSION in run_postrun("sessions", env=env).stdout  # its workspace is not known yet
    return aside, manifest


def outbox(db: Path) -> list[tuple[str, str]]:
    with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as connection:
        rows = connection.execute("SELECT session_id, op FROM mirror_outbox").fetchall()
        kinds = connection.execute("SELECT session_id, kind FROM tombstones").fetchall()
    return [(str(a), str(b)) for a, b in rows + kinds]


def test_a_session_stored_before_its_manifest_is_removed_when_it_shows_it_excluded(
    env: dict[str, str], tmp_path: Path
) -> None:
    db = Path(env["POSTRUN_DB"])
    aside, manifest = stored_without_manifest(env, tmp_path, "/home//dev/shop/")
    found = forensic.evidence(db, SESSION, "Clean up the deploy and check the config")
    shutil.move(aside, manifest)

    done = run_postrun("ingest", str(manifest.parent), env=env)
    assert done.returncode == 0, done.stderr
    assert (
        f"{SESSION}: not recorded: workspace /home/dev/shop matches exclude '/home//dev/shop/';"
        " removed what was stored of it before its workspace was known" in done.stderr
    )
    assert SESSION not in run_postrun("sessions", env=env).stdout
    assert (SESSION, "delete") in outbox(db) and (SESSION, "excluded") in outbox(db)  # the mirror drops its copy
    assert [trace for path in forensic.store_files(db) for trace in forensic.traces(path, found)] == []
    doctor = run_postrun("doctor", env=env).stdout
    assert f"1 session(s) removed when their workspace turned out excluded: {SESSION}" in doctor

    again = run_postrun("ingest", str(manifest.parent), env=env)  # never stored again
    assert SESSION not in run_postrun("sessions", env=env).stdout
    assert f"{SESSION}: removed when its workspace turned out excluded; `postrun ingest --force`" in again.stderr


def test_a_capture_removes_it_too(env: dict[str, str], tmp_path: Path) -> None:
    db = Path(env["POSTRUN_DB"])
    aside, manifest = stored_without_manifest(env, tmp_path, "/home/dev/shop")
    found = forensic.evidence(db, SESSION, "Clean up the deploy and check the config")
    shutil.move(aside, manifest)
    done = run_postrun("capture", "--once", env=env)
    assert done.returncode == 0, done.stderr
    assert f"cline {SESSION}: not recorded: workspace /home/dev/shop matches exclude '/home/dev/shop';" in done.stderr
    assert SESSION not in run_postrun("sessions", env=env).stdout
    assert [trace for path in forensic.store_files(db) for trace in forensic.traces(path, found)] == []


@pytest.mark.parametrize("command", [("ingest",), ("capture", "--once")])
def test_a_session_stored_before_its_workspace_was_excluded_is_kept(
    env: dict[str, str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    db = Path(env["POSTRUN_DB"])
    root = copy_data("cline/review_flags", tmp_path / "data")
    env.update(POSTRUN_CLINE_DIR=str(root))
    assert run_postrun("ingest", str(root / SESSION), env=env).returncode == 0
    before = read_store(db)[SESSION]
    messages = root / SESSION / f"{SESSION}.messages.json"
    messages.write_bytes(messages.read_bytes() + b" ")  # changed since: read again
    env.update(POSTRUN_EXCLUDE="/home/dev/shop")

    done = run_postrun(*command, *([str(root / SESSION)] if command == ("ingest",) else []), env=env)
    assert done.returncode == 0, done.stderr
    assert (
        f"{SESSION}: not recorded: workspace /home/dev/shop matches exclude '/home/dev/shop'; what was stored of it"
        f" before is kept as it is (`postrun forget {SESSION}` removes it)" in done.stderr
    )
    assert read_store(db)[SESSION] == before
    assert outbox(db) == [(SESSION, "upsert")]  # no tombstone, and the mirror keeps its copy
    doctor = run_postrun("doctor", env=env).stdout
    assert f"1 stored session(s) were recorded before: {SESSION} (/home/dev/shop)" in doctor
