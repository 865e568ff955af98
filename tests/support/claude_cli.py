"""The real Claude Code CLI (pinned, from npm, in ``.ci/node``) and a scripted model for it on loopback.

``.ci/run`` installs the CLI; a test run elsewhere installs it on first use, and skips (with
the reason) when npm or the package cannot be reached, except under CI. The model is
``tests/support/cc_mock.py`` (a verbatim copy of the shared cc-mock): it answers the Anthropic
Messages API from a script and logs every request, so a test reads what the CLI sent back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.support.postgres import free_port

CLAUDE_CODE = "@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION = "2.1.332"
NODE_DIR = REPO / ".ci" / "node"  # ignored by git
MOCK = Path(__file__).with_name("cc_mock.py")


def claude_cli() -> Path:
    """The pinned CLI's executable, installed into ``.ci/node`` when missing."""
    executable = NODE_DIR / "node_modules" / ".bin" / "claude"
    if not _installed(executable):
        npm = shutil.which("npm")
        problem = "npm is not installed" if npm is None else _npm_install(npm)
        if problem is not None:
            if os.environ.get("CI"):
                raise RuntimeError(f"{CLAUDE_CODE}@{CLAUDE_CODE_VERSION}: {problem}; CI must run the Claude Code tests")
            pytest.skip(f"the Claude Code CLI is not available ({problem})")
    return executable


def _installed(executable: Path) -> bool:
    manifest = NODE_DIR / "node_modules" / CLAUDE_CODE / "package.json"
    if not executable.exists() or not manifest.is_file():
        return False
    return bool(json.loads(manifest.read_text()).get("version") == CLAUDE_CODE_VERSION)


def _npm_install(npm: str) -> str | None:
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(NODE_DIR), "--no-save", "--no-audit", "--no-fund",
             f"{CLAUDE_CODE}@{CLAUDE_CODE_VERSION}"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "npm install timed out"
    if done.returncode != 0:
        return "npm install failed: " + " ".join(done.stderr.split())[-300:]
    return None


@dataclass(frozen=True)
class ScriptedModel:
    url: str
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the Messages API requests the CLI made, in order."""
        entries = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [
            e["body"]
            for e in entries
            if e.get("method") == "POST" and str(e.get("path", "")).split("?")[0].endswith("/messages")
        ]


@contextmanager
def scripted_model(folder: Path, script: dict[str, Any]) -> Iterator[ScriptedModel]:
    """The mock on a free loopback port, answering from ``script`` until the block ends."""
    script_file, log = folder / "script.json", folder / "requests.jsonl"
    script_file.write_text(json.dumps(script))
    for _ in range(3):  # another process may take the free port first
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, str(MOCK), "--port", str(port), "--script", str(script_file), "--log", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None
        if "mock listening" in process.stderr.readline():  # written once it is bound
            break
        process.wait(30)
        process.stderr.close()
    else:
        raise RuntimeError("the scripted model could not bind a loopback port")
    try:
        yield ScriptedModel(f"http://127.0.0.1:{port}", log)
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()


def run_print_mode(
    executable: Path, prompt: str, *, home: Path, model: ScriptedModel, mcp_config: Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``claude -p`` with nothing of this machine's: a scratch home, the scripted model, only ``mcp_config``."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "TERM": "dumb",
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "fake",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    started = time.monotonic()
    done = subprocess.run(
        [str(executable), "-p", prompt, "--output-format", "stream-json", "--verbose",
         "--mcp-config", str(mcp_config), "--strict-mcp-config", "--allowedTools", "mcp__postrun"],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"claude exited {done.returncode} after {time.monotonic() - started:.0f} s: {done.stderr[-2000:]}"
    )
    return done
