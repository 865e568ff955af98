"""Ingest processes: a batched ingest's sessions prepared (read, mapped, flagged) beside the writer.

A batched ingest is two kinds of work: preparing (pure Python, holding the GIL throughout)
and storing (SQLite and zstd). A thread of the same process cannot overlap them: each time
the writer returns from SQLite it waits for the GIL the preparing thread holds (a whole
switch interval at worst), so storing slows down by more than the thread prepares. Ingest
processes can: each prepares its share of the sessions and packs every step as the store
writes it (``StepWrite``: the compressed record and its search text), and the writer stores
each as it comes, errors included, exactly as preparing in line gives it; between two replies
the writer prepares sessions no process was given, so neither side waits for the other while
there is work, and the writer never holds a prepared session for its turn.

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
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

from postrun.agents.registry import Helpers, Location, adapter
from postrun.errors import PostrunError, UsageError
from postrun.ingest import ahead
from postrun.ingest.early import prepare_early
from postrun.ingest.prepare import Known, Mapped, MapRules, Prepared, internal_error, prepare_location
from postrun.records import PackedFile, RawFile
from postrun.store import vault
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
# over 1,000 one-turn sessions it waited for work 3.5 s of its 25 s, 0.7 s with 48. 8 MB, not
# 4: 4 MB is three 1.2 MB sessions, which a process had prepared before the writer was back from
# a commit or cutting the vault's dictionary (1-2 % of 40 large sessions' cold ingest).
_AHEAD_BYTES = 8 * 2**20
_AHEAD = 32
_COLLECT_EVERY = 500


@dataclass(frozen=True, slots=True)
class Processes:
    """How many ingest processes prepare a batched ingest (0: it prepares in line), from how many sessions on."""

    count: int
    from_sessions: int = PROCESSES_FROM_SESSIONS
    from_bytes: int = PROCESSES_FROM_BYTES
    started: ahead.Ahead | None = None  # processes started ahead, taken before any is started

    def worth_it(self, sizes: Callable[[], Sequence[int]], sessions: int) -> bool:
        """Whether ``sessions`` sessions of ``sizes()`` bytes each are prepared in processes."""
        if self.count <= 0 or sessions < 2:
            return False
        return sessions >= self.from_sessions or sum(sizes()) >= self.from_bytes

    @classmethod
    def wanted(cls, setting: int | None, started: ahead.Ahead | None = None) -> Processes:
        """The ``ingest_processes`` setting: by default one fewer than the CPUs this process may
        run on (the writer keeps one busy) for a batched ingest worth it; a number the user
        chose holds for any. ``started``: processes started ahead (``ahead.started_ahead``)."""
        if setting is not None:
            return cls(setting, from_sessions=2, from_bytes=0, started=started)
        return cls(ahead.default_count(), started=started)


@contextlib.contextmanager
def prepared(
    locations: Sequence[Location],
    known_of: Callable[[str], Known],
    helpers_of: Callable[[str], Helpers],
    rules: MapRules,
    *,
    processes: Processes | None = None,
    store: Path | None = None,
) -> Iterator[Iterator[tuple[int, Mapped]]]:
    """Every session of ``locations`` prepared, with its index, as each is ready (in order when
    prepared here). ``known_of(session_id)`` is asked of each once, as it is given to a process
    or prepared here (not of them all first: for many small sessions that held back the first
    one given by tens of milliseconds); its errors propagate. With ``processes`` (for as many
    sessions as it says), processes prepare them, reading the helpers they need from ``store``,
    and the writer the sessions no process was given while none has answered; else they are
    prepared here, with ``helpers_of``. An ingest process that fails (killed, out of memory) is
    no session's failure: what it had not given back is prepared here."""

    def task(index: int) -> Task:
        location = locations[index]
        return location, known_of(location.session_id)

    def here(location: Location, known: Known) -> Mapped:
        return prepare_location(location, known, helpers_of(location.session_id), rules)

    size_of = functools.cache(lambda index: source_bytes(locations[index]))
    sizes = functools.cache(lambda: [size_of(index) for index in range(len(locations))])
    if processes is None or store is None or not processes.worth_it(sizes, len(locations)):
        yield ((index, here(*task(index))) for index in range(len(locations)))
        return
    taken = processes.started.take(processes.count) if processes.started is not None else []
    pool = _Pool(processes.count, taken, store, dataclasses.replace(rules, flag_memo=None, valid_memo=None))
    try:
        yield pool.results(task, len(locations), size_of, here)
    finally:
        pool.close()


def source_bytes(location: Location) -> int:
    """The size of the file that makes the session, as it is now (0 when it cannot be looked at):
    what sharing the work goes by. One ``stat``: the session's whole fingerprint (its other
    files, its helpers' transcripts looked up) cost the writer 1.4 ms a session, a tenth of
    what it spent storing one-turn sessions, for a share that a guess serves as well."""
    try:
        return location.where.stat().st_size
    except OSError:
        return 0


def serve(connection: Connection, agent: str = "", targets: Sequence[str] = ()) -> None:
    """An ingest process (``postrun.ingest.pool_process``): prepare each session the writer sends, until
    it sends None or is gone. Its first message is the store's path and the mapping rules.
    ``agent``: the kind whose adapter it imports first, while the writer lists its sessions
    (reading the first session would import its adapter, the writer waiting for the reply);
    ``targets``: the ingest's first targets, whose first sessions it prepares before that message
    (``postrun.ingest.early``; only the first process is told them: it is given the first session)."""
    # Ctrl-C reaches the whole process group: the writer stops the batched ingest, and then this.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if agent:
        with contextlib.suppress(UsageError):  # an unknown kind is the writer's to report
            adapter(agent)
    # As for a batched ingest in one process: mapped records hold no cycles (see ``collector_paused``);
    # what little does (a failure's traceback) is collected every so many sessions.
    gc.disable()
    try:
        # No more source than the writer gives a process ahead of its replies, and no more sessions
        # than it was told (``ahead.TOLD_TARGETS`` says why that many).
        early = prepare_early(
            connection,
            agent,
            targets,
            os.environ,
            sessions=ahead.TOLD_TARGETS,
            source_bytes=_AHEAD_BYTES,
            size_of=source_bytes,
        )
        store, rules = connection.recv()
        early = early.under(rules)
        with contextlib.closing(Database.open_reader(store)) as reader:
            # The vault's hashing and compression here too: storing is the writer's alone, and on
            # many small sessions the writer is the busier side.
            pack = functools.partial(vault.pack, reader.connection) if rules.keep_raw else None
            for handled in itertools.count(1):
                task = connection.recv()
                if task is None:
                    return
                if handled % _COLLECT_EVERY == 0:
                    gc.collect()
                location, known = task
                found = early.take(location, known) or prepare_location(
                    location, known, StoredHelpers(reader, location.session_id), rules
                )
                connection.send_bytes(packed_reply(found, pack))
    except (EOFError, OSError):
        return  # the writer is gone
    finally:
        connection.close()


# A session to prepare, and what the store said of it.
Task = tuple[Location, Known]

# What an ingest process gives back of a session: ``Mapped`` without the location, which the
# writer holds (it gave the task).
Reply = tuple[Prepared | PostrunError, float]


def packed_reply(found: Mapped, pack: Callable[[RawFile], PackedFile] | None) -> memoryview:
    """``found`` as sent to the writer (a ``Reply``), its steps and raw files packed
    (``Prepared.packed``); a bug met packing or pickling it is that session's failure alone, as
    it would be in line."""
    location, result, mapped_ms = found
    try:
        if isinstance(result, Prepared):
            result = result.packed(pack)
        return ForkingPickler.dumps((result, mapped_ms))
    except Exception as exc:  # noqa: BLE001 - one bad session never stops the others
        return ForkingPickler.dumps((internal_error(location, exc), mapped_ms))


class _Shares:
    """Which sessions of a batched ingest each process was given and has not given back (in the
    order it answers), and how many bytes of source they are."""

    def __init__(self, processes: int, size_of: Callable[[int], int], sessions: int) -> None:
        self.size_of = size_of
        self.given = [0] * processes
        self.queued: list[deque[int]] = [deque() for _ in range(processes)]
        self.taken = 0  # sessions given to a process or prepared here: the next is the first of the rest
        self.left = sum(size_of(index) for index in range(sessions))  # bytes of those not taken yet

    def may_give(self, number: int) -> bool:
        """Whether process ``number`` may be given the next session: it holds none, or it would
        then hold no more than ``_AHEAD`` sessions and ``_AHEAD_BYTES`` of source, nor more than
        its fair share of the work left (its own and the rest, shared with the writer), so that
        at the end the writer takes the last sessions rather than wait for a process to prepare
        them one after another."""
        held = len(self.queued[number])
        if not held:
            return True
        size = self.size_of(self.taken)
        fair = (sum(self.given) + self.left) / (len(self.given) + 1)
        return held < _AHEAD and self.given[number] + size <= min(_AHEAD_BYTES, fair)

    def give(self, number: int) -> None:
        self.given[number] += self.size_of(self.taken)
        self.queued[number].append(self.taken)
        self.take()

    def take(self) -> int:
        """The next session is taken (given, or prepared here); its index."""
        position = self.taken
        self.left -= self.size_of(position)
        self.taken += 1
        return position

    def given_back(self, number: int) -> int:
        position = self.queued[number].popleft()
        self.given[number] -= self.size_of(position)
        return position

    def waited_for(self) -> list[int]:
        return [number for number, queued in enumerate(self.queued) if queued]


class _Pool:
    """Ingest processes; each session goes to the process with the fewest bytes of source given
    and not yet given back (a few large sessions spread as many small ones do), or to the
    writer while no process has answered; each comes out as soon as it is prepared, so the
    writer never holds a session it prepared until another's turn."""

    def __init__(self, count: int, taken: list[ahead.Started], store: Path, rules: MapRules) -> None:
        """``count`` processes: those ``taken`` (started ahead), and as many more started now."""
        self.pipes: list[Connection] = []
        self.processes = [started.process for started in taken]
        self.working = True
        for started in taken:
            self.pipes.append(Connection(started.socket.detach()))
        while len(self.pipes) < count:
            now = ahead.start()
            if now is None:  # no process to be had: the sessions are mapped in line
                self.working = False
                break
            self.pipes.append(Connection(now.socket.detach()))
            self.processes.append(now.process)
        for number in range(len(self.pipes)):
            self._send(number, (store, rules))

    def results(
        self,
        task: Callable[[int], Task],
        count: int,
        size_of: Callable[[int], int],
        here: Callable[[Location, Known], Mapped],
    ) -> Iterator[tuple[int, Mapped]]:
        """The ``count`` sessions ``task`` makes (by index) prepared, each as it is ready."""
        shares = _Shares(len(self.pipes), size_of, count)
        given: dict[int, Task] = {}  # the tasks given and not given back, by index

        def asked(position: int) -> Task:
            """Its session's task: the one a process was given (or failed to be sent), else made now."""
            return given.pop(position, None) or task(position)

        while True:
            if not self.working:  # what the processes had not given back is prepared here
                for queued in shares.queued:
                    while queued:
                        position = queued.popleft()
                        yield position, here(*asked(position))
            self._give(shares, task, count, given)
            answered = next((number for number in shares.waited_for() if self._ready(number)), None)
            if answered is not None:
                position = shares.given_back(answered)
                reply = self._receive(answered)
                location, known = asked(position)
                yield position, (location, *reply) if reply is not None else here(location, known)
            elif shares.taken < count:
                # No process has answered (starting up, or slower than the writer stores): the
                # writer prepares the next session no process was given, rather than wait idle.
                position = shares.take()
                yield position, here(*asked(position))
            elif waited_for := shares.waited_for():
                wait([self.pipes[number] for number in waited_for])  # a process's end answers too
            else:
                return

    def _give(self, shares: _Shares, task: Callable[[int], Task], count: int, given: dict[int, Task]) -> None:
        """The next sessions to the process with the fewest bytes given, as far as it may be given
        ahead; each one's task kept in ``given`` (one a failed send left there is prepared here)."""
        while self.working and shares.taken < count:
            least = min(range(len(shares.given)), key=shares.given.__getitem__)
            if not shares.may_give(least):
                return
            given[shares.taken] = task(shares.taken)
            self._send(least, given[shares.taken])
            if self.working:
                shares.give(least)

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

    def _receive(self, number: int) -> Reply | None:
        try:
            found: Reply = self.pipes[number].recv()
        except Exception:  # noqa: BLE001 - a dead process, or a reply that cannot be read
            self.working = False
            return None
        return found

    def close(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send(None)
            pipe.close()
        ahead.end(self.processes)
