"""Shared test fixtures: isolated environments, the real `postrun` executable, leak checks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", help="also run the long variants of the suites")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="long variant: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves threads running (observers, timers, workers)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    while leaked and time.monotonic() < deadline:
        for thread in leaked:
            thread.join(0.05)
        leaked = [t for t in leaked if t.is_alive()]
    assert not leaked, f"threads leaked by the test: {[t.name for t in leaked]}"


def postrun_command() -> list[str]:
    """The installed `postrun` console script next to this interpreter, else `python -m postrun`."""
    script = Path(sys.executable).parent / "postrun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "postrun"]


def isolated_environ(tmp: Path) -> dict[str, str]:
    """A process environment whose HOME, XDG dirs and store live under ``tmp``."""
    home = tmp / "home"
    home.mkdir()
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("POSTRUN_", "CLINE_", "CLAUDE_", "CODEX_", "XDG_"))
        and key not in {"NOTIFY_SOCKET", "INVOCATION_ID"}
    }
    environ.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        POSTRUN_DB=str(tmp / "store" / "postrun.db"),
        # A capture watches Cline alone, as the tests of its log lines expect; a test of
        # several agents names them.
        POSTRUN_AGENTS="cline",
        PYTHONUNBUFFERED="1",
    )
    return environ


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A process environment whose HOME, XDG dirs and store live under tmp_path."""
    return isolated_environ(tmp_path)


def run_postrun(
    *args: str, env: Mapping[str, str], timeout: float = 120, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*postrun_command(), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input_text,
        errors="replace",
    )
