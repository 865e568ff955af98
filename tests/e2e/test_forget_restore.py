"""Restoring a backup made before a forget does not bring the forgotten session back."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import FIXTURES, run_postrun
from tests.support import forensic
from tests.support.capture_process import copy_data

SESSION = "1790000100000_review"
BASIC = "1790000000000_basic"


def test_a_restore_keeps_the_tombstones_and_forgets_again_what_was_forgotten_since(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = copy_data("cline/review_flags", tmp_path / "data")
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions" / BASIC, root / BASIC)
    db = Path(env["POSTRUN_DB"])
    assert run_postrun("ingest", str(root / SESSION), str(root / BASIC), env=env).returncode == 0
    found = forensic.evidence(db, SESSION, "Clean up the deploy and check the config")
    backup = tmp_path / "before-forget.db"
    assert run_postrun("backup", str(backup), env=env).returncode == 0
    forgot = run_postrun("forget", SESSION, "--yes", env=env)
    assert forgot.returncode == 0, forgot.stderr

    restored = run_postrun("restore", str(backup), "--yes", env=env)
    assert restored.returncode == 0, restored.stderr
    assert f"restored {backup} into {db}: 2 sessions" in restored.stdout
    assert f"forgot {SESSION} again: the backup holds it; it was forgotten at 20" in restored.stderr
    listing = run_postrun("sessions", env=env).stdout
    assert SESSION not in listing and BASIC in listing
    assert forensic.traces(db, found) == [] and forensic.traces(Path(f"{db}-wal"), found) == []
    assert forensic.traces(Path(f"{db}.before-restore"), found) == []
    again = run_postrun("ingest", str(root / SESSION), env=env)  # its tombstone outlived the restore
    assert again.returncode == 0 and f"{SESSION}: forgotten (postrun forget)" in again.stderr

    # A second restore of the same backup says it again: nothing of the first one stays.
    twice = run_postrun("restore", str(backup), "--yes", env=env)
    assert twice.returncode == 0 and f"forgot {SESSION} again" in twice.stderr
    assert SESSION not in run_postrun("sessions", env=env).stdout
