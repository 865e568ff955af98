"""Helpers for end-to-end tests of the real `postrun capture` process.

Every wait is a bounded wait on a condition: the capture's log (stderr, sent to a file)
or the store, read through a fresh read-only SQLite connection each time.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import apsw

from tests.conftest import FIXTURES, postrun_command

T = TypeVar("T")
WAIT_SECONDS = 20.0
_counter = itertools.count(1)


def wait_until(condition: Callable[[], T | None], *, timeout: float = WAIT_SECONDS, what: str = "condition") -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


class RunningProcess:
    """A real `postrun` process a test started: stop it with a signal, or kill what is left."""

    process: subprocess.Popen[str]

    def stop(self, number: int = signal.SIGTERM, timeout: float = 10.0) -> tuple[int, float]:
        """Send ``number`` and wait for the exit: (exit code, seconds it took)."""
        started = time.monotonic()
        self.process.send_signal(number)
        code = self.process.wait(timeout)
        return code, time.monotonic() - started

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


class CaptureProcess(RunningProcess):
    """A running `postrun capture ...`; its stderr (the log) goes to a file."""

    def __init__(
        self, env: Mapping[str, str], workdir: Path, *args: str, program: Sequence[str] = (), cwd: Path | None = None
    ) -> None:
        self.log_path = workdir / f"capture-{next(_counter)}.log"
        self.args = args
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                [*(program or postrun_command()), "capture", *args],
                env=dict(env),
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def lines(self, pattern: str) -> list[str]:
        regex = re.compile(pattern)
        return [line for line in self.log().splitlines() if regex.search(line)]

    def wait_for_log(self, pattern: str, *, count: int = 1, timeout: float = WAIT_SECONDS) -> list[str]:
        """Wait until ``pattern`` (a regex) matches at least ``count`` log lines."""

        def found() -> list[str] | None:
            if self.process.poll() is not None and len(self.lines(pattern)) < count:
                raise AssertionError(f"capture exited ({self.process.returncode}) before {pattern!r}:\n{self.log()}")
            matches = self.lines(pattern)
            return matches if len(matches) >= count else None

        try:
            return wait_until(found, timeout=timeout, what=f"log line {pattern!r} x{count}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- capture log ---\n{self.log()}") from None

    def wait_until(self, condition: Callable[[], T | None], *, what: str, timeout: float = WAIT_SECONDS) -> T:
        """``wait_until``, with the capture's log in the failure message."""
        try:
            return wait_until(condition, timeout=timeout, what=what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- capture log ---\n{self.log()}") from None

    def send(self, number: int) -> None:
        self.process.send_signal(number)


@dataclass(frozen=True)
class StoredSession:
    id: str
    ended_at: str | None
    steps: int
    updated_at: str
    digest: str
    step_digests: tuple[tuple[str, str], ...]


def read_store(db: Path) -> dict[str, StoredSession]:
    """Every stored session, read-only (empty when the store does not exist yet)."""
    if not db.exists():
        return {}
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        connection.set_busy_timeout(2000)
        sessions = {}
        for session_id, ended_at, updated_at, session_digest in connection.execute(
            "SELECT id, ended_at, updated_at, digest FROM sessions"
        ):
            steps = tuple(
                (str(step_id), str(step_digest))
                for step_id, step_digest in connection.execute(
                    "SELECT id, digest FROM steps WHERE session_id = ? ORDER BY seq", (session_id,)
                )
            )
            sessions[session_id] = StoredSession(session_id, ended_at, len(steps), updated_at, session_digest, steps)
        return sessions
    except apsw.SQLError as exc:
        if "no such table" in str(exc):
            return {}
        raise
    finally:
        connection.close()


def expected_steps(case_dir: Path, session_id: str) -> int:
    """The number of steps the fixture's own expect.json says the session has."""
    facts = json.loads((case_dir / "expect.json").read_text())
    return sum(facts["sessions"][session_id]["counts"].values())


def copy_data(case: str, destination: Path) -> Path:
    """Copy a fixture's Cline data dir (fixtures are read-only inputs); returns its sessions root.

    The copies are written now, as on a fresh clone: kept, a checkout's older times made its
    sessions inactive a day later (capture polls only sessions changed within a day)."""
    shutil.copytree(FIXTURES / case / "data", destination, copy_function=shutil.copy)
    return destination / "sessions"


@dataclass(frozen=True)
class Snapshot:
    relative: str  # "<session id>/<file name>"
    source: Path
    valid_json: bool
    t: float


def snapshots(case: str) -> list[Snapshot]:
    """Every version of each session file as real Cline wrote them, in order."""
    folder = FIXTURES / case / "snapshots"
    entries = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines() if line.strip()]
    return [Snapshot(e["file"], folder / e["snapshot"], bool(e["valid_json"]), float(e["t"])) for e in entries]


def replay(
    case: str,
    root: Path,
    *,
    how: str = "in_place",
    time_scale: float = 0.25,
    max_gap: float = 0.3,
) -> Iterator[Snapshot]:
    """Write a real run's snapshots into ``root`` in order, as Cline did (yields after each write).

    ``how`` is ``in_place`` (truncate then write, as Cline's writeFileSync) or ``rename``
    (write a temp file, then rename it over the real one). The writer keeps the run's
    rhythm, compressed by ``time_scale``: this pacing simulates a writer; it is not a wait.
    """
    previous: float | None = None
    for snapshot in snapshots(case):
        if previous is not None:
            time.sleep(min(max(snapshot.t - previous, 0.0) * time_scale, max_gap))
        previous = snapshot.t
        target = root / snapshot.relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = snapshot.source.read_bytes()
        if how == "in_place":
            with target.open("wb") as handle:  # truncate, then write
                handle.write(data)
        else:
            temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            temp.write_bytes(data)
            os.replace(temp, target)
        yield snapshot


def write_in_place(path: Path, data: bytes) -> None:
    with path.open("wb") as handle:
        handle.write(data)
