"""Reading and mapping sessions, in line or a few sessions ahead on a thread of their own.

A catch-up over many sessions is two kinds of work: parsing and mapping (Python) and
storing (SQLite, zstd). SQLite and zstd release the GIL while they work, so a thread
that keeps the next sessions mapped overlaps the two on a second core. Results come out
in order, errors included, exactly as mapping in line gives them. (A thread, not a
process: Postrun starts no process.)
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from postrun.errors import Excluded, PostrunError, SourceError
from postrun.records import MappedSession, RawFile, StoredActor
from postrun.review.apply import FlagMemo, flag_session
from postrun.review.exclude import Exclusions
from postrun.schema import SchemaError

# Below this many sessions a thread is not worth starting.
AHEAD_MIN_SESSIONS = 4
# Sessions mapped ahead of the writer (their records wait in memory).
_AHEAD = 3
_POLL_SECONDS = 0.1

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
    """A session mapped, flagged and validated, with the raw files it was mapped from (for the vault)."""

    mapped: MappedSession
    raw: tuple[RawFile, ...]


# A session, what mapping it gave (or why it cannot be stored), and how long that took (ms).
Mapped = tuple[SessionLocation, Prepared | PostrunError, float]


def internal_error(location: SessionLocation, exc: Exception) -> PostrunError:
    """A bug met on one session: that session's failure, never the others'."""
    return PostrunError(str(location.messages), f"internal error: {type(exc).__name__}: {exc}")


def map_files(
    files: SessionFiles,
    approvals: Approvals,
    raw: Sequence[RawFile],
    helpers: Helpers,
    rules: MapRules,
    cache: MappingCache | None = None,
) -> tuple[Prepared, MappingCache]:
    """Map, flag and validate a session's files (``raw``: what they were read from)."""
    # Checked before mapping: an excluded session costs a read, never a mapping.
    root = workspace_root(files.manifest)
    pattern = rules.exclusions.matching(root) if rules.exclusions is not None else None
    if pattern is not None:
        raise Excluded(files.location.session_id, f"not recorded: workspace {root} matches exclude {pattern!r}")
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
        files = read_session(location, max_bytes=rules.max_bytes)
        prepared: Prepared | PostrunError = prepare(files, known.approvals, helpers, rules)[0]
    except PostrunError as exc:
        prepared = exc
    except Exception as exc:  # noqa: BLE001 - one bad session never stops the others
        prepared = internal_error(location, exc)
    return location, prepared, (time.perf_counter() - started) * 1000


@contextlib.contextmanager
def mapped_in_order(
    locations: Sequence[SessionLocation],
    known_of: Callable[[str], Known],
    helpers_of: Callable[[str], Helpers],
    rules: MapRules,
) -> Iterator[Iterator[Mapped]]:
    """Every session of ``locations`` mapped, in order. ``known_of(session_id)`` (read from the
    store on this thread) is asked before mapping starts; its errors propagate.
    ``helpers_of(session_id)`` is read on the mapping thread: it needs a connection of its own."""
    if len(locations) < AHEAD_MIN_SESSIONS:

        def here(location: SessionLocation) -> Mapped:
            session_id = location.session_id
            return map_location(location, known_of(session_id), helpers_of(session_id), rules)

        yield (here(location) for location in locations)
        return
    ahead = _Ahead(locations, {location.session_id: known_of(location.session_id) for location in locations})
    thread = threading.Thread(target=ahead.run, args=(helpers_of, rules), name="postrun-mapper", daemon=True)
    thread.start()
    try:
        yield ahead.results(thread)
    finally:
        ahead.stopping.set()
        thread.join()


@dataclass(frozen=True, slots=True)
class _Crashed:
    """The mapping thread met an error mapping never gives (a bug): raised on the reader's side."""

    error: BaseException


class _Ahead:
    def __init__(self, locations: Sequence[SessionLocation], known: dict[str, Known]) -> None:
        self.locations = locations
        self.known = known
        self.ready: queue.Queue[Mapped | _Crashed] = queue.Queue(maxsize=_AHEAD)
        self.stopping = threading.Event()

    def run(self, helpers_of: Callable[[str], Helpers], rules: MapRules) -> None:
        try:
            for location in self.locations:
                session_id = location.session_id
                mapped = map_location(location, self.known[session_id], helpers_of(session_id), rules)
                if not self._hand_over(mapped):
                    return
        except BaseException as exc:  # noqa: BLE001 - re-raised on the reader's thread
            self._hand_over(_Crashed(exc))

    def _hand_over(self, item: Mapped | _Crashed) -> bool:
        """Queue ``item`` for the reader; False when the reader stopped reading."""
        while not self.stopping.is_set():
            try:
                self.ready.put(item, timeout=_POLL_SECONDS)
            except queue.Full:
                continue
            return True
        return False

    def results(self, thread: threading.Thread) -> Iterator[Mapped]:
        for _ in self.locations:
            while True:
                try:
                    item = self.ready.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    if not thread.is_alive() and self.ready.empty():
                        raise RuntimeError("the mapping thread ended early") from None
                    continue
                break
            if isinstance(item, _Crashed):
                raise item.error
            yield item
