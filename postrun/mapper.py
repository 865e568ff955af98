"""Reading and mapping sessions: in line, or, for a catch-up over many, in processes of their own.

A catch-up is two kinds of work: reading, mapping and flagging (pure Python, holding the GIL
throughout) and storing (SQLite and zstd). A thread of the same process cannot overlap them:
each time the writer returns from SQLite it waits for the GIL the mapping thread holds (a
whole switch interval at worst), so storing slows down by more than the thread maps. Mapping
processes can: each maps its share of the sessions and packs every step as the store writes
it (``StepWrite``: the compressed record and its search text), and the writer stores them in
order, errors included, exactly as mapping in line gives them.

A mapping process only reads (the agent's files, and the store for a helper it cannot read
now), holds no lock, and ends when the writer is gone: it reads its work from a socket only
the writer holds the other end of, so the writer's end (or its death, by kill -9 too) is
end-of-file to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

from postrun.agents.cline import (
    MappingCache,
    SessionFiles,
    SessionLocation,
    approval_source,
    map_session,
    read_session,
    workspace_root,
)
from postrun.agents.cline.layout import ByteLayout
from postrun.errors import Excluded, PostrunError, SourceError
from postrun.records import MappedSession, RawFile, StoredActor
from postrun.review.apply import FlagMemo, flag_session
from postrun.review.exclude import Exclusions
from postrun.schema import SchemaError
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database
from postrun.store.write import StepWrite, step_write

# Below this many sessions, starting processes (about 0.3 s each, importing Postrun) costs more
# than they save (about 2 ms a session).
PROCESSES_FROM_SESSIONS = 200
# Sessions each process is given ahead of the writer. Memory stays bounded whatever their size:
# replies wait in the socket's buffer or, one that does not fit, in its process, which maps
# nothing more until the writer has read it.
_AHEAD = 6
# The socket's buffer (the kernel's, capped by net.core.wmem_max): a reply holds the session's
# raw files for the vault, often more than the default ~200 KB, and a process that waits to
# send stops mapping; room for a few sessions keeps it mapping while the writer stores a slow one.
_REPLY_BUFFER_BYTES = 4 * 2**20
_STOP_SECONDS = 5.0
_COLLECT_EVERY = 500

Approvals = dict[str, Any]
# The store's helper actors of a session, for a helper whose transcript cannot be read now.
Helpers = Mapping[str, StoredActor]


@dataclass(frozen=True, slots=True)
class MapRules:
    """How every session of an ingest is read and mapped."""

    max_bytes: int
    exclusions: Exclusions | None = None
    flag_memo: FlagMemo | None = None


@dataclass(frozen=True, slots=True)
class Known:
    """What the store said of a session before it was mapped: its approval snapshot (None: not
    stored yet), and why it is not to be recorded (forgotten), if so."""

    approvals: Approvals | None
    refused: PostrunError | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A session mapped, flagged and validated, with the raw files it was mapped from (for the vault).

    ``steps``, when a mapping process packed them, are the session's steps as the store writes
    them; ``mapped.steps`` is then empty (the records are not sent twice). ``cache``, when it
    was mapped in line, is the mapping cache it left (a mapping process keeps none).
    """

    mapped: MappedSession
    raw: tuple[RawFile, ...]
    steps: tuple[StepWrite, ...] | None = None
    cache: MappingCache | None = None

    def packed(self) -> Prepared:
        steps = tuple(step_write(row) for row in self.mapped.steps)
        return Prepared(dataclasses.replace(self.mapped, steps=[]), self.raw, steps)


# A session, what mapping it gave (or why it cannot be stored), and how long that took (ms).
Mapped = tuple[SessionLocation, Prepared | PostrunError, float]


def internal_error(location: SessionLocation, exc: Exception) -> PostrunError:
    """A bug met on one session: that session's failure, never the others'."""
    return PostrunError(str(location.messages), f"internal error: {type(exc).__name__}: {exc}")


def refuse_excluded(session_id: str, manifest: dict[str, Any] | None, rules: MapRules) -> None:
    """Raise ``Excluded`` when the session's workspace (from its manifest) matches an exclude."""
    root = workspace_root(manifest)
    pattern = rules.exclusions.matching(root) if rules.exclusions is not None else None
    if pattern is not None:
        raise Excluded(session_id, f"not recorded: workspace {root} matches exclude {pattern!r}")


def read_admitted(location: SessionLocation, rules: MapRules, known: ByteLayout | None = None) -> SessionFiles:
    """``read_session`` for mapping: an excluded session costs a read of its manifest, never of
    its transcripts (they may be large, and are read again at every start-up otherwise)."""
    return read_session(
        location,
        max_bytes=rules.max_bytes,
        known=known,
        admit=lambda manifest: refuse_excluded(location.session_id, manifest, rules),
    )


def map_files(
    files: SessionFiles,
    approvals: Approvals,
    raw: Sequence[RawFile],
    helpers: Helpers,
    rules: MapRules,
    cache: MappingCache | None = None,
) -> tuple[Prepared, MappingCache]:
    """Map, flag and validate a session's files (``raw``: what they were read from)."""
    # Files not read by ``read_admitted`` (the vault's copies) are checked here, before mapping.
    refuse_excluded(files.location.session_id, files.manifest, rules)
    try:
        mapped, cache = map_session(files, approvals, cache, helpers)
        mapped = flag_session(mapped, rules.flag_memo)
        mapped.validate()
    except SchemaError as exc:
        raise SourceError(str(files.location.messages), f"maps to invalid records: {exc.problems[0]}") from None
    return Prepared(mapped, tuple(raw)), cache


def prepare(
    files: SessionFiles,
    stored: Approvals | None,
    helpers: Helpers,
    rules: MapRules,
    cache: MappingCache | None = None,
) -> tuple[Prepared, MappingCache]:
    """Map a session just read. ``stored`` is the approval snapshot the store kept for it;
    None for a session not stored yet: its snapshot is taken now, and its settings file
    goes to the vault with the session's files."""
    raw = list(files.raw)
    approvals = stored
    if approvals is None:
        location = files.location
        approvals, settings_file = approval_source(location.data_dir, files.client_source, max_bytes=rules.max_bytes)
        if settings_file is not None:
            raw.append(settings_file)
    return map_files(files, approvals, raw, helpers, rules, cache)


def map_location(location: SessionLocation, known: Known, helpers: Helpers, rules: MapRules) -> Mapped:
    if known.refused is not None:
        return location, known.refused, 0.0
    started = time.perf_counter()
    try:
        files = read_admitted(location, rules)
        mapped, cache = prepare(files, known.approvals, helpers, rules)
        prepared: Prepared | PostrunError = dataclasses.replace(mapped, cache=cache)
    except PostrunError as exc:
        prepared = exc
    except Exception as exc:  # noqa: BLE001 - one bad session never stops the others
        prepared = internal_error(location, exc)
    return location, prepared, (time.perf_counter() - started) * 1000


@dataclass(frozen=True, slots=True)
class Processes:
    """How many processes map a catch-up (0: it maps in line), from how many sessions on."""

    count: int
    from_sessions: int = PROCESSES_FROM_SESSIONS

    @classmethod
    def wanted(cls, setting: int | None) -> Processes:
        """The ``ingest_processes`` setting: by default one fewer than the CPUs this process may
        run on (the writer keeps one busy) for a catch-up worth it; a number the user chose
        holds for any catch-up."""
        if setting is not None:
            return cls(setting, from_sessions=2)
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return cls(max(1, cpus - 1))


@contextlib.contextmanager
def mapped_in_order(
    locations: Sequence[SessionLocation],
    known_of: Callable[[str], Known],
    helpers_of: Callable[[str], Helpers],
    rules: MapRules,
    *,
    processes: Processes | None = None,
    store: Path | None = None,
) -> Iterator[Iterator[Mapped]]:
    """Every session of ``locations`` mapped, in order. ``known_of(session_id)`` is asked of
    each before mapping starts; its errors propagate. With ``processes`` (for as many sessions
    as it says), processes map them, reading the helpers they need from ``store``; else they
    are mapped here, with ``helpers_of``. A mapping process that fails (killed, out of memory)
    is no session's failure: what it had not given back is mapped here."""
    known = [(location, known_of(location.session_id)) for location in locations]

    def here(location: SessionLocation, known: Known) -> Mapped:
        return map_location(location, known, helpers_of(location.session_id), rules)

    if processes is None or processes.count <= 0 or store is None or len(locations) < processes.from_sessions:
        yield (here(location, known) for location, known in known)
        return
    pool = _Pool(processes.count, store, dataclasses.replace(rules, flag_memo=None))
    try:
        yield pool.results(known, here)
    finally:
        pool.close()


def serve(connection: Connection) -> None:
    """A mapping process (``postrun.mapper_process``): map each session the writer sends, until
    it sends None or is gone. Its first message is the store's path and the mapping rules."""
    # Ctrl-C reaches the whole process group: the writer stops the catch-up, and then this.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # As for a catch-up in one process: mapped records hold no cycles (see ``collector_paused``);
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
                found = map_location(location, known, StoredHelpers(reader, location.session_id), rules)
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


class _Pool:
    """Mapping processes; session ``i`` goes to process ``i % count``, which keeps the order."""

    def __init__(self, count: int, store: Path, rules: MapRules) -> None:
        self.pipes: list[Connection] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.working = True
        for _ in range(count):
            ours, theirs = socket.socketpair()
            with contextlib.suppress(OSError):  # a smaller buffer only slows the catch-up
                theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _REPLY_BUFFER_BYTES)
            try:
                # A process of its own, started afresh: the writer holds an open SQLite connection
                # that a fork must not share, and Postrun may run as any program's module. -P: the
                # current folder is not put on the import path (a module there must never run).
                process = subprocess.Popen(
                    [sys.executable, "-P", "-m", "postrun.mapper_process", str(theirs.fileno())],
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
        self, tasks: Sequence[tuple[SessionLocation, Known]], here: Callable[[SessionLocation, Known], Mapped]
    ) -> Iterator[Mapped]:
        count = len(self.pipes)
        sent = 0
        for position, (location, known) in enumerate(tasks):
            while self.working and sent < min(len(tasks), position + count * _AHEAD):
                self._send(sent % count, tasks[sent])
                sent += 1
            found = self._receive(position % count) if self.working else None
            yield found if found is not None else here(location, known)

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
