"""Ingest processes started ahead of a batched ingest (see ``postrun.ingest.pool``).

An ingest process starts an interpreter and imports what preparing needs: about half as long as
``postrun ingest`` takes to import typer and the library, load its settings, list its targets and
open the store. Started first, before any of that (``start_early``, as the interpreter starts),
its start-up overlaps the writer's, and the first process then prepares the first targets'
first sessions until the writer gives it work (``postrun.ingest.early``); started when the
writer has sessions to give, the writer prepares alone meanwhile. This module imports nothing of
the library, so that starting them costs the writer nothing either.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# The socket's buffer (the kernel's, capped by net.core.wmem_max): a reply holds the session's
# raw files for the vault, often more than the default ~200 KB, and a process that waits to
# send stops preparing; room for a few sessions keeps it preparing while the writer stores a slow one.
_REPLY_BUFFER_BYTES = 4 * 2**20
_STOP_SECONDS = 5.0
# The targets an ingest process is told on its command line, whose first sessions it prepares
# before the writer gives it work (``postrun.ingest.early``, at most this many): one-turn sessions
# take about 2 ms each, the writer's start-up a quarter of a second. A command line of a few
# kilobytes.
TOLD_TARGETS = 64
# The ``ingest_processes`` setting as the environment gives it (``postrun.settings``: POSTRUN_
# and the field's name). Read alone, as the processes start before the settings are loaded: 0
# there starts none (a value from the settings file is honoured when the pool is made, and
# processes it does not take end with the block).
PROCESSES_VARIABLE = "POSTRUN_INGEST_PROCESSES"


@dataclass(frozen=True, slots=True)
class Started:
    """An ingest process, and the writer's end of the socket it reads its work from."""

    process: subprocess.Popen[bytes]
    socket: socket.socket


def usable_cpus() -> int:
    """The CPUs this process (and what it starts) may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_count() -> int:
    """One fewer than the CPUs this process may run on (the writer keeps one busy), at least one."""
    return max(1, usable_cpus() - 1)


def start(agent: str | None = None, targets: Sequence[str] = ()) -> Started | None:
    """One ingest process (None: no process to be had, the sessions are prepared in line).
    ``agent``: the kind whose sessions it will be given, if known: it imports that adapter while
    it waits for its first session, which would import it otherwise. ``targets``: the ingest's
    targets, whose first sessions it prepares meanwhile (the first ``TOLD_TARGETS``)."""
    ours, theirs = socket.socketpair()
    with contextlib.suppress(OSError):  # a smaller buffer only slows the batched ingest
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _REPLY_BUFFER_BYTES)
    try:
        # A process of its own, started afresh: the writer holds an open SQLite connection
        # that a fork must not share, and Postrun may run as any program's module. -P: the
        # current folder is not put on the import path (a module there must never run).
        process = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-m",
                "postrun.ingest.pool_process",
                str(theirs.fileno()),
                *([agent or "", *targets[:TOLD_TARGETS]] if agent or targets else []),
            ],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        ours.close()
        return None
    finally:
        theirs.close()  # only the process holds its end: the writer's end closing is its EOF
    return Started(process, ours)


def end(started: Sequence[subprocess.Popen[bytes]]) -> None:
    """Wait for processes whose work ended (their socket closed) to exit; kill one that does not."""
    deadline = time.monotonic() + _STOP_SECONDS
    for process in started:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Ahead:
    """Ingest processes started before the batched ingest that may use them; those it does not
    take end with ``close``."""

    def __init__(self, started: list[Started]) -> None:
        self._started = started

    def take(self, count: int) -> list[Started]:
        taken, self._started = self._started[:count], self._started[count:]
        return taken

    def close(self) -> None:
        """End the processes no batched ingest took. Killed, not asked: they hold nothing but
        their socket, and one still importing would answer only once it is done."""
        left, self._started = self._started, []
        for started in left:
            started.socket.close()
            started.process.kill()
            started.process.wait()


def may_be_many(targets: Sequence[str]) -> bool:
    """Whether ``postrun ingest`` of ``targets`` may be many sessions: more than one target, or a
    folder (of sessions, or a session's). A guess before they are listed: one session's folder
    costs a process started for nothing, on another core."""
    return len(targets) > 1 or any(_is_folder(target) for target in targets)


def _is_folder(target: str) -> bool:
    try:
        return Path(target).is_dir()
    except OSError:  # a name the system will not look at (too long): the listing says so
        return False


def count_ahead(targets: Sequence[str], environ: Mapping[str, str]) -> int:
    """How many ingest processes to start ahead of ``postrun ingest`` of ``targets``: as many as a
    batched ingest wants by default when they may be many sessions, unless the environment sets
    ``ingest_processes`` to 0 (blank is unset, as for every setting)."""
    if environ.get(PROCESSES_VARIABLE, "").strip() == "0" or not may_be_many(targets):
        return 0
    return default_count()


@contextlib.contextmanager
def started_ahead(targets: Sequence[str], environ: Mapping[str, str], agent: str | None = None) -> Iterator[Ahead]:
    """The ingest processes ``count_ahead`` says for ``agent``'s ``targets``: those ``start_early``
    started for them, else started now (``start``); those not taken end with the block."""
    early = _take_early(targets, agent)
    # Told no targets: a command line ``start_early`` did not read may set other settings
    # (``--config``) than the ones an early session is prepared under.
    ahead = Ahead(early if early is not None else _started_for(targets, environ, agent, told=()))
    try:
        yield ahead
    finally:
        ahead.close()


def _started_for(
    targets: Sequence[str], environ: Mapping[str, str], agent: str | None, *, told: Sequence[str]
) -> list[Started]:
    # Only the first is told the targets: the pool gives it the first session, and (one process,
    # the default on 2 cores) every one after it that the writer does not prepare itself.
    count = count_ahead(targets, environ)
    return [one for number in range(count) if (one := start(agent, told if number == 0 else ())) is not None]


@dataclass(frozen=True, slots=True)
class _Early:
    targets: tuple[str, ...]
    agent: str | None
    started: list[Started]


# What ``start_early`` started, until ``started_ahead`` takes it or ``end_early`` ends it.
_early: _Early | None = None


def start_early(argv: Sequence[str], environ: Mapping[str, str]) -> None:
    """Start the ingest processes of ``postrun ingest`` now, as the interpreter starts, when
    ``argv`` (the program's arguments) plainly is that command (``ingest_command``): they start up,
    and the first prepares the first sessions, while the writer imports typer and the library.
    ``started_ahead`` takes them if the command is what this guessed; ``end_early`` ends them."""
    global _early
    end_early()
    command = ingest_command(argv)
    if command is None:
        return
    targets, agent = command
    try:
        _early = _Early(targets, agent, _started_for(targets, environ, agent, told=targets))
    except Exception:  # noqa: BLE001 - a head start: whatever it met, the command meets again and says
        end_early()


def end_early() -> None:
    """End the processes ``start_early`` started that no ingest took."""
    global _early
    early, _early = _early, None
    if early is not None:
        Ahead(early.started).close()


def _take_early(targets: Sequence[str], agent: str | None) -> list[Started] | None:
    """The processes ``start_early`` started for ``targets`` and ``agent`` (None: none were; those
    started for another guess are ended)."""
    global _early
    early, _early = _early, None
    if early is None:
        return None
    if (early.targets, early.agent) == (tuple(targets), agent):
        return early.started
    Ahead(early.started).close()
    return None


def ingest_command(argv: Sequence[str]) -> tuple[tuple[str, ...], str | None] | None:
    """The targets and ``--agent`` of ``postrun ingest`` as its arguments ``argv`` give them, when
    they plainly are that command and nothing else (None otherwise: ``--help``, an option this does
    not know, another command). A guess before typer parses them: a wrong one costs only
    processes started for nothing, which ``started_ahead`` ends."""
    if not argv or argv[0] != "ingest":
        return None
    targets: list[str] = []
    agent: str | None = None
    arguments = iter(argv[1:])
    for argument in arguments:
        if argument == "--":
            targets.extend(arguments)
        elif argument == "--agent":
            agent = next(arguments, None)
            if agent is None:
                return None
        elif argument.startswith("--agent="):
            agent = argument.removeprefix("--agent=")
        elif argument != "--force":
            if argument.startswith("-"):
                return None
            targets.append(argument)
    return tuple(targets), agent
