"""Running the real `postrun` where file permissions apply: as root they do not, so the tests
that make a file unreadable run it under ``setpriv`` (skipped, with the reason, where that
cannot be done)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

import pytest

from tests.conftest import postrun_command


def permissions_apply(setpriv: Sequence[str], refused: str) -> list[str]:
    """The command prefix under which file permissions apply to `postrun`: none for another user
    than root, else ``setpriv`` with ``setpriv`` options; the test is skipped when that cannot
    run `postrun` (``refused``, with setpriv's own words)."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", *setpriv]
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions would prove nothing")
    tried = subprocess.run([*prefix, *postrun_command(), "--version"], capture_output=True, check=False)
    if tried.returncode != 0:
        pytest.skip(f"{refused}: {tried.stderr.decode(errors='replace')[-200:]}")
    return prefix
