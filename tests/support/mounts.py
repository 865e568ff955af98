"""Real small file systems for a test: a shell script run in a mount namespace of its own."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping

import pytest

from tests.conftest import postrun_command

MOUNT_REFUSED = 90  # what a script exits with when its ``mount`` fails (``|| exit 90``)


def in_private_mounts(script: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``script`` run by ``sh`` as root of a private mount namespace (``unshare -rm``), with the
    command that runs ``postrun`` as its arguments (``"$@"``); the test is skipped where there is
    no ``unshare`` or the mount is refused."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare to mount a file system privately")
    run = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", *postrun_command()],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if run.returncode == MOUNT_REFUSED:
        pytest.skip(f"cannot mount a tmpfs in a mount namespace here: {run.stderr[-200:]}")
    return run
