"""``postrun capture --daemon``: detach with python-daemon, for machines without a service manager.

The calling process forks a child that enters ``daemon.DaemonContext`` (which forks twice
more and closes every descriptor but the ones kept). Everything else happens in the
final daemon process, after those forks: logging to the capture log, the lock, the store,
the watchdog threads (threads and SQLite connections must never cross a fork). The
daemon reports over a pipe once it holds the lock and watches, and the caller prints its
pid; the capture lock file, which records that pid, is the pid file.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn

from postrun.capture.lock import read_capture_info
from postrun.errors import AlreadyRunning, PostrunError, UsageError
from postrun.exitcodes import ExitCode
from postrun.paths import working_dir

SUPERVISOR_VARIABLES = ("INVOCATION_ID", "NOTIFY_SOCKET")
READY_TIMEOUT_SECONDS = 60.0
DAEMON_UMASK = 0o077

ReportReady = Callable[[int], None]


class DaemonFailed(PostrunError):
    """The daemon stopped before it was ready; carries the daemon's own exit code."""

    def __init__(self, where: str, reason: str, exit_code: int) -> None:
        super().__init__(where, reason)
        self.exit_code = ExitCode(exit_code) if exit_code in set(ExitCode) else ExitCode.FAILURE


def refuse_under_supervisor(environ: Mapping[str, str]) -> None:
    """A service manager (systemd: INVOCATION_ID, Type=notify: NOTIFY_SOCKET) must run capture in
    the foreground: a detached child would escape its supervision."""
    for name in SUPERVISOR_VARIABLES:
        if environ.get(name, "").strip():
            raise UsageError(
                "--daemon",
                f"refused: a service manager runs this capture ({name} is set); it supervises capture"
                " in the foreground, so run `postrun capture` without --daemon",
            )


def refuse_when_running(capture_lock: Path) -> None:
    """Say so before forking when a capture already holds the store: a daemon that fails on the
    lock would write its error into the running capture's log. (The lock itself still decides.)"""
    holder = read_capture_info(capture_lock)
    if holder is not None:
        # pid 0: the holder's status is empty (it could not be written, say on a full disk).
        pid = f" (pid {holder.pid})" if holder.pid else ""
        raise AlreadyRunning(holder.db or str(capture_lock), f"another capture is running{pid}")


def start_daemon(run: Callable[[ReportReady], int], *, log_hint: str) -> int:
    """Start ``run(report_ready)`` in a detached daemon; return its pid once it called ``report_ready``.

    Raises DaemonFailed with the daemon's own message (and exit code) when it stops before
    it is ready, PostrunError when it does not report in time.
    """
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_fd)
        _become_daemon(run, write_fd)
    os.close(write_fd)
    try:
        message = _read_report(read_fd, READY_TIMEOUT_SECONDS)
    finally:
        os.close(read_fd)
        os.waitpid(child, 0)  # the first child exits as soon as the daemon has detached
    kind, _, rest = message.partition(" ")
    if kind == "ready" and rest.strip().isdigit():
        return int(rest)
    if kind == "error":
        code, _, reason = rest.partition(" ")
        raise DaemonFailed("", reason.strip(), int(code) if code.isdigit() else 1)
    if not message:
        raise DaemonFailed("capture --daemon", f"the daemon stopped before it was ready (see {log_hint})", 1)
    raise PostrunError("capture --daemon", f"the daemon did not report ready in time (see {log_hint})")


def _read_report(fd: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        readable, _, _ = select.select([fd], [], [], left)
        if not readable:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").strip()


def _become_daemon(run: Callable[[ReportReady], int], write_fd: int) -> NoReturn:
    """In the forked child: detach, run, and never return into the caller's stack."""
    import daemon  # python-daemon; imported here so the rest of Postrun never needs it

    code = 1
    reported = False

    def report(line: str) -> None:
        nonlocal reported
        if not reported:
            reported = True
            try:
                os.write(write_fd, (line + "\n").encode())
            except OSError:
                pass  # the caller stopped waiting (killed, or timed out): the daemon runs on
            finally:
                os.close(write_fd)

    try:
        context = daemon.DaemonContext(
            umask=DAEMON_UMASK,
            # Not "/": SIGHUP re-reads the configuration, and relative paths in it (a flag, a
            # POSTRUN_* variable) must mean what they meant when capture was started.
            # "/" when it was removed: the settings just loaded hold no relative path then.
            working_directory=str(working_dir() or "/"),
            files_preserve=[write_fd],
            detach_process=True,
            prevent_core=True,
            # Our own handlers (installed by ``run``) stop cleanly; python-daemon's default
            # SIGTERM handler would raise SystemExit wherever the main thread happens to be.
            signal_map={signal.SIGTSTP: None, signal.SIGTTIN: None, signal.SIGTTOU: None},
        )
        with context:
            try:
                code = run(lambda pid: report(f"ready {pid}"))
            except PostrunError as exc:
                code = int(exc.exit_code)
                report(f"error {code} {exc}")
            except Exception as exc:  # noqa: BLE001 - its stderr is /dev/null: tell the waiting parent
                code = 1
                report(f"error 1 internal error: {type(exc).__name__}: {exc}")
    finally:
        os._exit(code)
