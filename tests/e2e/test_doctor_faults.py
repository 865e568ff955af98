"""The real `postrun doctor` on a machine where something is really wrong: agents' folders it
cannot list, a folder where a file should be.

File permissions do not apply to root, so as root the unreadable cases run `postrun` without
the two capabilities that bypass them (``setpriv --bounding-set``): the same uid, its files
and its Python still its own, but a ``chmod 000`` folder refused as to any user.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, postrun_command
from tests.support.mounts import in_private_mounts
from tests.support.permissions import permissions_apply

DENIED = "cannot list: Permission denied"
HINT = "      hint: capture runs as you and must be able to list it: check its permissions (`ls -ld` it)"


def _permissions_apply() -> list[str]:
    """The command prefix under which file permissions apply to this process's `postrun`: the
    same uid without the two capabilities that bypass them."""
    return permissions_apply(
        ["--bounding-set=-dac_override,-dac_read_search"], "cannot drop the file-permission capabilities here"
    )


def _doctor(env: dict[str, str], prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), *postrun_command(), "doctor"], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def roots(env: dict[str, str], tmp_path: Path) -> dict[str, Path]:
    """Every agent's folder, from the fixtures, watched by the configuration in ``env``."""
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", tmp_path / "cline")
    shutil.copytree(FIXTURES / "claude-code-real" / "a_read_edit_write" / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex-real" / "a_commands" / "sessions", tmp_path / "codex" / "sessions")
    found = {
        "cline": tmp_path / "cline" / "sessions",
        "claude-code": tmp_path / "claude" / "projects",
        "codex": tmp_path / "codex" / "sessions",
    }
    env.update(
        POSTRUN_AGENTS="cline,claude-code,codex",
        POSTRUN_CLINE_DIR=str(found["cline"]),
        POSTRUN_CLAUDE_DIR=str(found["claude-code"]),
        POSTRUN_CODEX_DIR=str(found["codex"]),
    )
    return found


@pytest.fixture
def unreadable(roots: dict[str, Path]) -> Iterator[dict[str, Path]]:
    for root in roots.values():
        root.chmod(0)
    yield roots
    for root in roots.values():
        root.chmod(0o755)  # pytest must be able to remove them


def _hint_of(lines: list[str], line: str) -> str:
    assert line in lines, "\n".join(lines)
    return lines[lines.index(line) + 1]


def test_agent_folders_that_cannot_be_listed_are_named_with_a_permissions_hint(
    env: dict[str, str], unreadable: dict[str, Path]
) -> None:
    result = _doctor(env, _permissions_apply())
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stdout + result.stderr  # Cline's folder is one that fails
    # Not "has Cline run on this machine?": the folder is there, capture may not read it.
    assert _hint_of(lines, f"fail  sessions: {unreadable['cline']}: {DENIED}") == HINT
    assert _hint_of(lines, f"warn  claude-code sessions: {unreadable['claude-code']}: {DENIED}") == HINT
    # Not "ok 0 sessions": every Codex session there goes unrecorded.
    codex = (
        f"warn  codex sessions: {unreadable['codex']}: {DENIED}; the sessions there are not recorded (0 sessions found)"
    )
    assert _hint_of(lines, codex) == HINT


def test_a_codex_folder_that_is_a_file_is_said_to_be_one(env: dict[str, str], roots: dict[str, Path]) -> None:
    shutil.rmtree(roots["codex"])
    roots["codex"].write_text("not a folder\n")
    result = _doctor(env)
    assert result.returncode == 0, result.stdout + result.stderr  # only Cline's folder can fail
    assert f"warn  codex sessions: {roots['codex']}: not a folder" in result.stdout.splitlines()
    assert "ok    codex sessions: 1 session in" not in result.stdout


def test_stored_sessions_behind_a_folder_it_cannot_enter_are_not_called_deleted(
    env: dict[str, str], roots: dict[str, Path]
) -> None:
    ingested = subprocess.run(
        [*postrun_command(), "capture", "--once"], env=env, capture_output=True, text=True, timeout=120
    )
    assert ingested.returncode == 0, ingested.stderr
    for root in roots.values():
        root.chmod(0)
    try:
        result = _doctor(env, _permissions_apply())
    finally:
        for root in roots.values():
            root.chmod(0o755)
    sources = next(line for line in result.stdout.splitlines() if line.startswith(("ok    sources:", "warn  sources:")))
    assert sources == (
        "ok    sources: 3 of 3 stored sessions' files could not be looked at (no permission); the others are where"
        " they were read"
    )


FILL_AND_CHECK = """
mount -t tmpfs -o size=4m tmpfs "$DISK" || exit 90
"$@" capture --once >/dev/null 2>&1 || exit 91
head -c 8388608 /dev/zero > "$DISK/filler" 2>/dev/null
"$@" doctor; echo "rc=$?"
rm "$DISK/filler"
"$@" doctor; echo "rc=$?"
"""


def test_a_full_disk_under_the_store_fails_the_store_check(
    env: dict[str, str], roots: dict[str, Path], tmp_path: Path
) -> None:
    """A real full file system: a 4 MB tmpfs under the store, in a mount namespace of the test's own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    env.update(DISK=str(disk), POSTRUN_DB=str(disk / "store" / "postrun.db"))
    run = in_private_mounts(FILL_AND_CHECK, env)
    assert run.returncode == 0, run.stdout + run.stderr
    full, _, freed = run.stdout.partition("rc=1\n")
    store = next(line for line in full.splitlines() if " store: " in line)
    # The store may not even open for reading (no room for its -shm file): the disk is still named.
    assert store.startswith(f"fail  store: {disk / 'store' / 'postrun.db'}"), store
    assert store.endswith(f" left for {disk / 'store'}): capture cannot record"), store
    assert "; its disk is full (" in store
    assert full.splitlines()[full.splitlines().index(store) + 1] == (
        "      hint: free space on that disk: capture retries by itself and records again once there is room"
    )
    # Room again, but under 100 MB: a warning, and doctor passes.
    assert freed.endswith("rc=0\n"), freed
    store = next(line for line in freed.splitlines() if " store: " in line)
    assert store.startswith("warn  store: ") and "; its disk is nearly full (" in store, store
