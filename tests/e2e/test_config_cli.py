"""The real `postrun` and its settings: a value it cannot run with is refused as it loads (one
line naming the variable or the flag, the documented exit code), never found out later by a
running capture."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, postrun_command, run_postrun


@pytest.mark.parametrize(
    ("variable", "value", "limit"),
    [
        ("POSTRUN_POLL_SECONDS", "1e10", "31536000"),
        ("POSTRUN_DEBOUNCE_SECONDS", "1e308", "31536000"),
        ("POSTRUN_RAW_COPY_SECONDS", "1e12", "31536000"),
        ("POSTRUN_FULL_SWEEP_MINUTES", "1e9", "525600"),
    ],
)
def test_a_wait_longer_than_a_year_is_a_configuration_error(
    env: dict[str, str], variable: str, value: str, limit: str
) -> None:
    result = run_postrun("config", "show", env={**env, variable: value})
    key = variable.removeprefix("POSTRUN_").lower()
    assert (result.returncode, result.stderr) == (
        78,
        f"error: {variable}: {key}: must be less than or equal to {limit} (got '{value}')\n",
    )


def test_a_year_long_poll_flag_is_a_usage_error_before_capture_starts(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    # Before: capture started, and its poll thread's wait overflowed (a traceback, capture gone).
    result = subprocess.run(
        [*postrun_command(), "capture", "--cline-dir", str(root), "--poll-seconds", "1e10"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (
        2,
        "error: --poll-seconds: must be less than or equal to 31536000 (got 10000000000.0)\n",
    )
