"""Ingest processes: a batched ingest's sessions prepared (read, mapped, flagged) beside the writer.

A batched ingest is two kinds of work: preparing (pure Python, holding the GIL throughout)
and storing (SQLite and zstd). A thread of the same process cannot overlap them: each time
the writer returns from SQLite it waits for the GIL the preparing thread holds (a whole
switch interval at worst), so storing slows down by more than the thread prepares. Ingest
processes can: each prepares its share of the sessions and packs every step as the store
writes it (``StepWrite``: the compressed record and its search text), and the writer stores
them in order, errors included, exactly as preparing in line gives them.

An ingest process only reads (the agent's files, and the store for a helper it cannot read
now), holds no lock, and ends when the writer is gone: it reads its work from a socket only
the writer holds the other end of, so the writer's end (or its death, by kill -9 too) is
end-of-file to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

from postrun.agents.registry import Helpers, Location, adapter_of
from postrun.errors import PostrunError
from postrun.ingest.prepare import Known, Mapped, MapRules, Prepared, internal_error, prepare_location
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database

# Starting processes (about 0.3 s each, importing Postrun) pays from this many sessions (about
# 2 ms each to prepare) or this much source (preparing takes about 1 s per 30 MB), whichever comes
# first: a few large sessions are as much work as many small ones.
PROCESSES_FROM_SESSIONS = 200
PROCESSES_FROM_BYTES = 16 * 2**20
# What each process is given ahead of the writer and has not given back: this much source, at
# most this many sessions, and always one. By bytes, as a few large sessions are as much work as
# many small ones: given 32 sessions ahead, one process was given a whole run of 40 large ones,
# and the writer (which prepares only sessions no process was given) waited for it; given 6,
# a process ran out of small sessions whenever the writer paused (a commit, a large session):
# over 1,000 one-turn sessions it waited for work 3.5 s of its 25 s, 0.7 s with 48.
_AHEAD_BYTES = 4 * 2**20
_AHEAD = 32
# What the writer prepares itself while a process it waits for has not answered, and holds until
# its turn: this much source, at most this many sessions, and always one. Given 3 sessions, over
# 1,334 one-turn sessions (where preparing is the slower side) the writer waited for its process
# 2.5-3.3 s, 1.0-1.6 s given 16; by bytes, as a mapped session holds about 3 times its source.
_HERE_AHEAD_BYTES = 2 * 2**20
_HERE_AHEAD = 16
# The socket's buffer (the kernel's, capped by net.core.wmem_max): a reply holds the session's
# raw files for the vault, often more than the default ~200 KB, and a process that waits to
# send stops preparing; room for a few sessions keeps it preparing while the writer stores a slow one.
_REPLY_BUFFER_BYTES = 4 * 2**20
_STOP_SECONDS = 5.0
_COLLECT_EVERY = 500


@dataclass(frozen=True, slots=True)
class Processes:
    """How many ingest processes prepare a batched ingest (0: it prepares in line), from how many sessions on."""

    count: int
    from_sessions: int = PROCESSES_FROM_SESSIONS
    from_bytes: int = PROCESSES_FROM_BYTES

    def worth_it(self, sizes: Callable[[], Sequence[int]], sessions: int) -> bool:
        """Whether ``sessions`` sessions of ``sizes()`` bytes each are prepared in processes."""
        if self.count <= 0 or sessions < 2:
            return False
        return sessions >= self.from_sessions or sum(sizes()) >= self.from_bytes

    @classmethod
    def wanted(cls, setting: int | None) -> Processes:
        """The ``ingest_processes`` setting: by default one fewer than the CPUs this process may
        run on (the writer keeps one busy) for a batched ingest worth it; a number the user
        chose holds for any."""
        if setting is not None:
            return cls(setting, from_sessions=2, from_bytes=0)
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return cls(max(1, cpus - 1))


@contextlib.contextmanager
def prepared_in_order(
    locations: Sequence[Location],
    known_of: Callable[[str], Known],
    helpers_of: Callable[[str], Helpers],
    rules: MapRules,
    *,
    processes: Processes | None = None,
    store: Path | None = None,
) -> Iterator[Iterator[Mapped]]:
    """Every session of ``locations`` prepared, in order. ``known_of(session_id)`` is asked of
    each before preparing starts; its errors propagate. With ``processes`` (for as many sessions
    as it says), processes prepare them, reading the helpers they need from ``store``; else they
    are prepared here, with ``helpers_of``. An ingest process that fails (killed, out of memory)
    is no session's failure: what it had not given back is prepared here."""
    known = [(location, known_of(location.session_id)) for location in locations]

    def here(location: Location, known: Known) -> Mapped:
        return prepare_location(location, known, helpers_of(location.session_id), rules)

    size_of = functools.cache(lambda index: source_bytes(locations[index]))
    sizes = functools.cache(lambda: [size_of(index) for index in range(len(locations))])
    if processes is None or store is None or not processes.worth_it(sizes, len(locations)):
        yield (here(location, known) for location, known in known)
        return
    pool = _Pool(processes.count, store, dataclasses.replace(rules, flag_memo=None, valid_memo=None))
    try:
        yield pool.results(known, size_of, here)
    finally:
        pool.close()


def source_bytes(location: Location) -> int:
    """The size of a session's files as they are now (0 when they cannot be looked at)."""
    try:
        return sum(found.size for found in adapter_of(location).fingerprint(location))
    except (OSError, PostrunError):
        return 0


def serve(connection: Connection) -> None:
    """An ingest process (``postrun.ingest.pool_process``): prepare each session the writer sends, until
    it sends None or is gone. Its first message is the store's path and the mapping rules."""
    # Ctrl-C reaches the whole process group: the writer stops the batched ingest, and then this.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # As for a batched ingest in one process: mapped records hold no cycles (see ``collector_paused``);
    # what little does (a failure's traceback) is collected every so many sessions.
    gc.disable()
    try:
        store, rules = connection.recv()
        with contextlib.closing(Database.open_reader(store)) as reader:
            for handled in itertools.count(1):
                task = connection.recv()
                if task is None:
                    return
                if handled % _COLLECT_EVERY == 0:
                    gc.collect()
                location, known = task
                found = prepare_location(location, known, StoredHelpers(reader, location.session_id), rules)
                connection.send_bytes(packed_reply(found))
    except (EOFError, OSError):
        return  # the writer is gone
    finally:
        connection.close()


def packed_reply(found: Mapped) -> memoryview:
    """``found`` as sent to the writer, its steps packed; a bug met packing or pickling it is that
    session's failure alone, as it would be in line."""
    location, result, mapped_ms = found
    try:
        if isinstance(result, Prepared):
            result = result.packed()
        return ForkingPickler.dumps((location, result, mapped_ms))
    except Exception as exc:  # noqa: BLE001 - one bad session never stops the others
        return ForkingPickler.dumps((location, internal_error(location, exc), mapped_ms))


class _Shares:
    """Which sessions of a batched ingest went where, and what each side holds ahead of the writer."""

    def __init__(self, processes: int, size_of: Callable[[int], int]) -> None:
        self.size_of = size_of
        self.given = [0] * processes  # bytes of source each process was given and has not given back
        self.held = [0] * processes  # sessions each process was given and has not given back
        self.went: list[int | None] = []  # the process each session went to; None: prepared here
        self.kept: dict[int, Mapped] = {}  # sessions prepared here, until their turn
        self.kept_bytes = 0

    def may_keep(self, size: int) -> bool:
        """Whether the writer may prepare (and hold) one more session of ``size`` bytes."""
        return not self.kept or (len(self.kept) < _HERE_AHEAD and self.kept_bytes + size <= _HERE_AHEAD_BYTES)


class _Pool:
    """Ingest processes; each session goes to the process with the fewest bytes of source given
    and not yet given back (a few large sessions spread as many small ones do), or to the
    writer while it would wait, and the results come out in order."""

    def __init__(self, count: int, store: Path, rules: MapRules) -> None:
        self.pipes: list[Connection] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.working = True
        for _ in range(count):
            ours, theirs = socket.socketpair()
            with contextlib.suppress(OSError):  # a smaller buffer only slows the batched ingest
                theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _REPLY_BUFFER_BYTES)
            try:
                # A process of its own, started afresh: the writer holds an open SQLite connection
                # that a fork must not share, and Postrun may run as any program's module. -P: the
                # current folder is not put on the import path (a module there must never run).
                process = subprocess.Popen(
                    [sys.executable, "-P", "-m", "postrun.ingest.pool_process", str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                )
            except OSError:  # no process to be had: the sessions are mapped in line
                ours.close()
                self.working = False
                return
            finally:
                theirs.close()  # only the process holds its end: the writer's end closing is its EOF
            self.pipes.append(Connection(ours.detach()))
            self.processes.append(process)
            self._send(len(self.pipes) - 1, (store, rules))

    def results(
        self,
        tasks: Sequence[tuple[Location, Known]],
        size_of: Callable[[int], int],
        here: Callable[[Location, Known], Mapped],
    ) -> Iterator[Mapped]:
        shares = _Shares(len(self.pipes), size_of)
        for position, (location, known) in enumerate(tasks):
            self._give(shares, tasks)
            if position in shares.kept:
                shares.kept_bytes -= size_of(position)
                yield shares.kept.pop(position)
                continue
            number = shares.went[position] if position < len(shares.went) else None
            if not self.working or number is None:
                yield here(location, known)
                continue
            # While its process has not answered (starting up, or slower than the writer stores),
            # the writer prepares the next session no process was given, rather than wait idle.
            while (
                len(shares.went) < len(tasks) and shares.may_keep(size_of(len(shares.went))) and not self._ready(number)
            ):
                index = len(shares.went)
                shares.went.append(None)
                shares.kept[index] = here(*tasks[index])
                shares.kept_bytes += size_of(index)
            found = self._receive(number)
            shares.given[number] -= size_of(position)
            shares.held[number] -= 1
            yield found if found is not None else here(location, known)

    def _give(self, shares: _Shares, tasks: Sequence[tuple[Location, Known]]) -> None:
        """The next sessions to the process with the fewest bytes given, as far as it may be given ahead."""
        while self.working and len(shares.went) < len(tasks):
            least = min(range(len(shares.given)), key=shares.given.__getitem__)
            size = shares.size_of(len(shares.went))
            if shares.held[least] and (shares.held[least] >= _AHEAD or shares.given[least] + size > _AHEAD_BYTES):
                return
            self._send(least, tasks[len(shares.went)])
            shares.given[least] += size
            shares.held[least] += 1
            shares.went.append(least)

    def _ready(self, number: int) -> bool:
        try:
            return self.pipes[number].poll(0)
        except OSError:
            return True  # its receive says what went wrong

    # A process that failed (killed, out of memory) stops the pool: the sessions it had not
    # given back are mapped in line.
    def _send(self, number: int, message: object) -> None:
        try:
            self.pipes[number].send(message)
        except OSError:
            self.working = False

    def _receive(self, number: int) -> Mapped | None:
        try:
            found: Mapped = self.pipes[number].recv()
        except Exception:  # noqa: BLE001 - a dead process, or a reply that cannot be read
            self.working = False
            return None
        return found

    def close(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send(None)
            pipe.close()
        deadline = time.monotonic() + _STOP_SECONDS
        for process in self.processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
