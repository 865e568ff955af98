"""A real Arize Phoenix (pinned, from PyPI, in its own virtualenv ``.ci/phoenix-venv``) on loopback.

Phoenix's dependencies are many and pinned tightly, so it lives apart from ours. ``.ci/run``
installs it; a test run elsewhere installs it on first use and skips (with the reason) when
it cannot be installed, except under CI, where the Phoenix tests must run.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.support.postgres import free_port

PHOENIX = "arize-phoenix"
PHOENIX_VERSION = "20.26.1"  # .ci/run reads it from here
VENV = REPO / ".ci" / "phoenix-venv"  # ignored by git
START_SECONDS = 240  # a cold start under load (migrations, the UI's assets) takes ~40 s here


def phoenix_executable() -> Path:
    """The pinned Phoenix's ``phoenix`` command, installed into ``.ci/phoenix-venv`` when missing."""
    executable = VENV / "bin" / "phoenix"
    if not _installed():
        problem = _install()
        if problem is not None:
            if os.environ.get("CI"):
                raise RuntimeError(f"{PHOENIX}=={PHOENIX_VERSION}: {problem}; CI must run the Phoenix tests")
            pytest.skip(f"Arize Phoenix cannot be installed ({problem})")
    return executable


def _installed() -> bool:
    python = VENV / "bin" / "python"
    if not (VENV / "bin" / "phoenix").exists() or not python.exists():
        return False
    found = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({PHOENIX!r}))"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return found.returncode == 0 and found.stdout.strip() == PHOENIX_VERSION


def _install() -> str | None:
    try:
        steps = (
            [sys.executable, "-m", "venv", str(VENV)],
            [str(VENV / "bin" / "pip"), "install", "-q", f"{PHOENIX}=={PHOENIX_VERSION}"],
        )
        for argv in steps:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=1200, check=False)
            if done.returncode != 0:
                lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
                return lines[-1] if lines else f"{argv[0]} exited {done.returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def phoenix_server(folder: Path) -> Iterator[str]:
    """``phoenix serve`` on a free loopback port with its working dir in ``folder``; yields
    its base URL once its health endpoint answers, stops it after."""
    executable = phoenix_executable()
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("PHOENIX_", "OTEL_"))}
    environ.update(
        PHOENIX_WORKING_DIR=str(folder / "working"),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(free_port()),
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
    )
    base = f"http://127.0.0.1:{port}"
    with (folder / "phoenix.log").open("wb") as log:
        process = subprocess.Popen([str(executable), "serve"], env=environ, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_healthy(base, process, folder / "phoenix.log")
            yield base
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)


def _wait_healthy(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"phoenix serve exited {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"phoenix serve not healthy after {START_SECONDS} s: {log.read_text(errors='replace')[-2000:]}")


def project_spans(base: str, project: str = "default") -> list[dict[str, Any]]:
    """Every span Phoenix holds in ``project``, through its REST API (all pages)."""
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = "limit=1000" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(f"{base}/v1/projects/{project}/spans?{query}", timeout=30) as answer:
            page = json.load(answer)
        spans.extend(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return spans
