"""The other benches, run by ``python -m bench`` after its own phases, each writing its own section.

Each runs as its own process (``python -m bench.<name>``), one after the other on the same
machine and commit, with sizes that keep the whole run short (``--full``: their defaults).
A bench that fails leaves a section saying so, with its command and the end of its output:
a section from another commit is never left standing as if this run had measured it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench import sections

# name: (quick arguments, full arguments)
_ARGUMENTS: dict[str, tuple[list[str], list[str]]] = {
    "review": (["--sessions", "300"], ["--sessions", "1000"]),
    # Five runs each way: the vault's share of a cold ingest's CPU is a difference of two noisy figures.
    "vault": (["--sessions", "400", "--runs", "5"], []),
    # Histories of 100-200 MB, so that a cold ingest's start-up is not most of what is timed.
    "claude": (["--sessions", "150"], ["--full"]),
    "codex": (["--sessions", "300"], ["--sessions", "1000"]),
    "web": (["--sessions", "2000", "--rounds", "3"], []),
    "mirror": (["--sessions", "300", "--busy-seconds", "15"], []),
}
NAMES = tuple(_ARGUMENTS)
_PEERED = ("claude", "codex")  # the benches that time agentsview too, with --peer
_TIMEOUT_SECONDS = 1800.0


def run_others(
    output: Path, *, full: bool, peer: bool, write: bool, skip: set[str], log: Callable[[str], None]
) -> dict[str, int]:
    """Run every other bench not in ``skip``; the exit status of each."""
    statuses: dict[str, int] = {}
    for name, (quick, complete) in _ARGUMENTS.items():
        if name in skip:
            continue
        arguments = [*(complete if full else quick), *(["--peer"] if peer and name in _PEERED else [])]
        command = [sys.executable, "-m", f"bench.{name}", *arguments, "--output", str(output)]
        log(f"bench.{name}: {' '.join(command[1:])}")
        try:
            finished = subprocess.run(
                [*command, *([] if write else ["--no-write"])],
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_SECONDS,
            )
            status, tail = finished.returncode, finished.stderr.strip().splitlines()[-5:]
        except subprocess.TimeoutExpired:
            status, tail = -1, [f"did not finish in {_TIMEOUT_SECONDS:.0f} s"]
        statuses[name] = status
        log(f"bench.{name}: exit {status}")
        if status != 0 and write:
            shown = " ".join(["python -m", f"bench.{name}", *arguments])
            sections.write(
                output,
                name,
                sections.stamped(shown, [f"**Not measured** in this run: exit {status}.", "", "```", *tail, "```"]),
            )
    return statuses
