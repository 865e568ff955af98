"""Running the real ``postrun`` process, and the figures the OS keeps about it.

Every run gets an isolated environment: its own HOME and XDG folders in the bench's temp
dir, ``POSTRUN_DB`` and ``POSTRUN_CLINE_DIR`` set, and no other ``POSTRUN_*`` or service
manager variable inherited, so no user configuration or journald wiring leaks in.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import psutil

from postrun.ingest.ahead import usable_cpus

_CAUGHT_UP = re.compile(r" (?:[a-z][a-z-]*|capture): caught up with ")  # any agent's, or all agents'
_INHERITED_DROPPED = ("JOURNAL_STREAM", "NOTIFY_SOCKET", "INVOCATION_ID", "WATCHDOG_USEC", "WATCHDOG_PID")


# Compiles the package that ``postrun`` imports, where its bytecode can be written: the installed
# one for the script (-P keeps the current folder off the path), the current folder's for
# ``python -m postrun``.
_COMPILE = "import compileall, os, postrun; compileall.compile_dir(os.path.dirname(postrun.__file__), quiet=1)"


@functools.cache
def postrun_command() -> list[str]:
    """The installed ``postrun`` script next to this interpreter, else ``python -m postrun``; the
    package's bytecode compiled first. pip compiles it as it installs, but an editable install
    where PYTHONDONTWRITEBYTECODE is set never writes it: every process of every run would
    then compile the whole library as it starts (about 0.1 s of CPU here), which no user pays."""
    script = Path(sys.executable).parent / "postrun"
    installed = script.exists()
    subprocess.run([sys.executable, *(["-P"] if installed else []), "-c", _COMPILE], check=True)
    return [str(script)] if installed else [sys.executable, "-m", "postrun"]


def cores() -> int:
    """The CPUs the bench and the processes it starts may run on (as ``postrun ingest`` counts them)."""
    return usable_cpus()


def stored_ids(finished: Finished, kind: str) -> list[str]:
    """The sessions of ``kind`` a ``postrun ingest`` reported stored (``ingested <kind> session <id>: …``)."""
    prefix = f"ingested {kind} session "
    return [line[len(prefix) :].split(":", 1)[0] for line in finished.stdout.splitlines() if line.startswith(prefix)]


def ingested(finished: Finished, kind: str) -> int:
    """How many sessions of ``kind`` a ``postrun ingest`` reported stored."""
    return len(stored_ids(finished, kind))


def ingest_fresh(
    targets: Sequence[str], env: Mapping[str, str], *, kind: str, db: Path, sessions: int, in_line: bool = False
) -> Finished:
    """``postrun ingest --agent kind targets`` into a fresh store at ``db`` (``env`` otherwise;
    ``in_line``: no ingest processes); fails unless it stored all ``sessions`` sessions."""
    fresh_env = ingest_env(env, db, in_line=in_line)
    finished = run([*postrun_command(), "ingest", "--agent", kind, *targets], fresh_env, timeout=7200)
    stored = ingested(finished, kind)
    if finished.returncode != 0 or stored != sessions:
        how = " in line" if in_line else ""
        raise RuntimeError(
            f"postrun ingest{how}: exit {finished.returncode}, {stored} of {sessions}: {finished.stderr[-2000:]}"
        )
    return finished


def ingest_env(env: Mapping[str, str], db: Path, *, in_line: bool = False) -> dict[str, str]:
    """``env`` with a fresh store at ``db`` (any store there before removed, its log too); ``in_line``:
    no ingest processes."""
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return dict(env) | {"POSTRUN_DB": str(db)} | ({"POSTRUN_INGEST_PROCESSES": "0"} if in_line else {})


def isolated_env(home: Path, *, db: Path, cline_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("POSTRUN_", "XDG_", "CLAUDE_")) and key not in _INHERITED_DROPPED
    }
    for name in ("config", "data", "state", "cache"):
        (home / f".{name}").mkdir(parents=True, exist_ok=True)
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".data"),
        "XDG_STATE_HOME": str(home / ".state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "POSTRUN_DB": str(db),
        "POSTRUN_CLINE_DIR": str(cline_dir),
        "POSTRUN_AGENTS": "cline",  # the Cline figures: a bench of another agent names it in ``extra``
    }
    return env | dict(extra or {})


@dataclass(frozen=True, slots=True)
class Finished:
    """A process that ran to its end, with the kernel's accounting of it (``wait4``)."""

    returncode: int
    wall_seconds: float  # from just before the fork to the reaping
    cpu_seconds: float  # user + system, all its threads and the processes it started
    max_rss_bytes: int  # the largest of its processes' peaks (the kernel's)
    stdout: str
    stderr: str
    tree_rss_bytes: int = 0  # the peak of its processes' resident sets added up (sampled)


class _TreeMemory:
    """The largest sum of the resident sets of a process and its descendants, sampled every
    20 ms: the kernel's figure is per process, and ``postrun ingest`` may map in processes
    of its own."""

    def __init__(self, pid: int) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(pid,), name="bench-tree-rss", daemon=True)
        self._thread.start()

    def _sample(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
        except psutil.Error:
            return
        while not self._stop.is_set():
            total = 0
            try:
                for process in (root, *root.children(recursive=True)):
                    with contextlib.suppress(psutil.Error):
                        total += process.memory_info().rss
            except psutil.Error:
                return
            self.peak = max(self.peak, total)
            self._stop.wait(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run(args: Sequence[str], env: Mapping[str, str], *, timeout: float = 900.0) -> Finished:
    """Run a command to its end; its output goes to files in ``HOME`` (no pipe can fill up)."""
    out_dir = Path(env["HOME"])
    out_path, err_path = out_dir / "run.stdout", out_dir / "run.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(list(args), env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        killer = threading.Timer(timeout, process.kill)  # a hung run fails the bench, never blocks it
        killer.start()
        memory = _TreeMemory(process.pid)
        try:
            # Not reaped until the sampler stops: its pid cannot be reused meanwhile.
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
            tree_rss = memory.stop()
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            killer.cancel()
            memory.stop()
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return Finished(
        process.returncode,
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss * 1024,
        out_path.read_text(errors="replace"),
        err_path.read_text(errors="replace"),
        max(tree_rss, usage.ru_maxrss * 1024),
    )


def strace_available() -> bool:
    return shutil.which("strace") is not None


def count_opens(args: Sequence[str], env: Mapping[str, str], trace_file: Path, pattern: str) -> tuple[Finished, int]:
    """Run under ``strace -f -e trace=open,openat`` and count successful opens of paths matching ``pattern``."""
    traced = ["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(trace_file), *args]
    finished = run(traced, env)
    opened = re.compile(r'open(?:at2?)?\((?:[^,]+, )?"(?P<path>[^"]*)".*\) = \d+')
    matcher = re.compile(pattern)
    count = 0
    for line in trace_file.read_text(errors="replace").splitlines():
        found = opened.search(line)
        if found is not None and matcher.search(found["path"]):
            count += 1
    return finished, count


class Capture:
    """A running ``postrun capture`` whose stderr log is followed line by line."""

    def __init__(self, env: Mapping[str, str], log_path: Path, args: Sequence[str] = ()) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self._offset = 0
        self._pending = b""
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [*postrun_command(), "capture", *args],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self.ps = psutil.Process(self.process.pid)

    def refresh(self) -> list[str]:
        """Read what the log gained since the last call; returns the new complete lines (also kept in ``lines``)."""
        with self.log_path.open("rb") as log:
            log.seek(self._offset)
            data = log.read()
        self._offset += len(data)
        *complete, self._pending = (self._pending + data).split(b"\n")
        lines = [line.decode(errors="replace") for line in complete]
        self.lines.extend(lines)
        return lines

    def wait_for(self, pattern: re.Pattern[str], timeout: float, *, since: int = 0) -> re.Match[str]:
        """The first log line from index ``since`` on that matches ``pattern``, waiting for it up to ``timeout``.

        Raises TimeoutError, or RuntimeError when capture exited.
        """
        deadline = time.monotonic() + timeout
        index = since
        while True:
            self.refresh()
            for line in self.lines[index:]:
                found = pattern.search(line)
                if found is not None:
                    return found
            index = max(index, len(self.lines))
            if self.process.poll() is not None:
                raise RuntimeError(f"postrun capture exited ({self.process.returncode}); log: {self.log_path}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no log line matching {pattern.pattern!r} in {timeout:g} s; log: {self.log_path}")
            time.sleep(0.01)

    def wait_stored(self, db: Path, session_ids: Sequence[str], timeout: float) -> None:
        """Wait for the start-up catch-up (its per-session lines are DEBUG), then check that
        it stored every one of ``session_ids``."""
        self.wait_for(_CAUGHT_UP, timeout)
        store = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            stored = {row[0] for row in store.execute("SELECT id FROM sessions")}
        finally:
            store.close()
        missing = [session_id for session_id in session_ids if session_id not in stored]
        if missing:
            raise RuntimeError(f"capture caught up without storing {', '.join(missing)}; log: {self.log_path}")

    def cpu_seconds(self) -> float:
        times = self.ps.cpu_times()
        return float(times.user + times.system)

    def rss_bytes(self) -> int:
        return int(self.ps.memory_info().rss)

    def peak_rss_bytes(self) -> int:
        """The kernel's high-water mark of the process's RSS (VmHWM), in bytes."""
        status = Path(f"/proc/{self.process.pid}/status")
        if status.exists():
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return self.rss_bytes()

    def stop(self, timeout: float = 10.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self.refresh()
        return self.process.returncode

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
