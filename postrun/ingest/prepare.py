"""Preparing a session: its files read by its agent's adapter, mapped, flagged and validated;
nothing stored. In line, or in an ingest process (``postrun.ingest.pool``)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from postrun.agents.registry import Approvals, Helpers, Location, ReadFiles, adapter_of
from postrun.errors import Excluded, PostrunError, SourceError
from postrun.records import MappedSession, PackedFile, RawCopy, RawFile, Validated
from postrun.review.apply import FlagMemo, flag_session
from postrun.review.exclude import Exclusions
from postrun.schema import SchemaError
from postrun.store.write import StepWrite, step_write


class ValidMemo:
    """What each recent session's last mapping was found valid with (``records.Validated``): a
    live session is re-mapped after each message, and its earlier turns and steps come back
    unchanged (bounded, as the mapping caches are; in the process that made it only)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Validated] = OrderedDict()

    def take(self, session_id: str) -> Validated | None:
        with self._lock:
            return self._sessions.pop(session_id, None)

    def keep(self, session_id: str, valid: Validated) -> None:
        with self._lock:
            self._sessions[session_id] = valid
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)


@dataclass(frozen=True, slots=True)
class MapRules:
    """How every session of an ingest is read and mapped (the memos: a capture's, for the
    sessions it re-ingests as they change)."""

    max_bytes: int
    exclusions: Exclusions | None = None
    flag_memo: FlagMemo | None = None
    valid_memo: ValidMemo | None = None
    keep_raw: bool = True  # whether the vault keeps the raw files (an ingest process packs them then)


@dataclass(frozen=True, slots=True)
class Known:
    """What the store said of a session before it was mapped: its approval snapshot (None: not
    stored yet), and why it is not to be recorded (forgotten), if so."""

    approvals: Approvals | None
    refused: PostrunError | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A session mapped, flagged and validated, with the raw files it was mapped from (for the vault).

    ``files`` is what it was read from: its ``raw`` is taken only when the vault copies them
    (``raw``), as taking it may read files again (a transcript read from its last mark is read
    whole only then); ``extra`` are files read besides (the approval settings). ``steps``, when
    an ingest process packed them, are the session's steps as the store writes them;
    ``mapped.steps`` is then empty (the records are not sent twice). ``cache``, when it was
    mapped in line, is the mapping cache it left (an ingest process keeps none).
    """

    mapped: MappedSession
    files: Any | None  # a ``ReadFiles``; None once its raw files are in ``extra`` (packed)
    extra: tuple[RawCopy, ...] = ()
    steps: tuple[StepWrite, ...] | None = None
    cache: Any | None = None

    @property
    def raw(self) -> tuple[RawCopy, ...]:
        """The raw files for the vault (read now when the files' ``raw`` reads)."""
        taken: tuple[RawFile, ...] = tuple(self.files.raw) if self.files is not None else ()
        return (*taken, *self.extra)

    def __reduce__(self) -> tuple[Any, ...]:
        # The steps cross from an ingest process as plain tuples: a named tuple is pickled and
        # read back through Python calls, which took four times as long for a session's steps.
        steps = None if self.steps is None else tuple(map(tuple, self.steps))
        return _prepared, (self.mapped, self.files, self.extra, steps, self.cache)

    def packed(self, pack: Callable[[RawFile], PackedFile] | None) -> Prepared:
        """For an ingest process's reply: the steps as the store writes them, and the raw files
        taken and packed with ``pack`` (None: the vault keeps none, and none is taken)."""
        if self.steps is None:
            return self.taken(raw=pack is not None).packed(pack)
        raw = tuple(pack(f) if isinstance(f, RawFile) else f for f in self.raw) if pack is not None else ()
        return Prepared(self.mapped, None, raw, self.steps)

    def taken(self, *, raw: bool = True) -> Prepared:
        """``packed`` but for compressing the raw files: the steps as the store writes them, and the
        raw files read now (``raw``), to be packed once the store's dictionary is known (a session
        an ingest process prepared before the writer named the store: ``postrun.ingest.early``)."""
        steps = tuple(step_write(row) for row in self.mapped.steps)
        return Prepared(dataclasses.replace(self.mapped, steps=[]), None, self.raw if raw else (), steps)


def _prepared(
    mapped: MappedSession,
    files: Any | None,
    extra: tuple[RawCopy, ...],
    steps: tuple[tuple[Any, ...], ...] | None,
    cache: Any | None,
) -> Prepared:
    """A ``Prepared`` as ``Prepared.__reduce__`` sent it, its steps ``StepWrite`` again."""
    return Prepared(mapped, files, extra, None if steps is None else tuple(map(StepWrite._make, steps)), cache)


# A session, what it was prepared into (or why it cannot be stored), and how long that took (ms).
Mapped = tuple[Location, Prepared | PostrunError, float]


def internal_error(location: Location, exc: Exception) -> PostrunError:
    """A bug met on one session: that session's failure, never the others'."""
    return PostrunError(str(location.where), f"internal error: {type(exc).__name__}: {exc}")


def refuse_excluded(session_id: str, workspace_root: str, rules: MapRules) -> None:
    """Raise ``Excluded`` when the session's workspace root matches an exclude."""
    pattern = rules.exclusions.matching(workspace_root) if rules.exclusions is not None else None
    if pattern is not None:
        raise Excluded(session_id, f"not recorded: workspace {workspace_root} matches exclude {pattern!r}")


def workspace_of(mapped: MappedSession) -> str:
    """The workspace root the records name (what ``exclude`` is checked against)."""
    workspace = mapped.session.get("workspace")
    root = workspace.get("root") if isinstance(workspace, dict) else None
    return root if isinstance(root, str) else ""


def read_admitted(location: Location, rules: MapRules, cache: Any | None = None) -> ReadFiles:
    """The adapter's ``read`` for mapping: an excluded session costs a read of what names its
    workspace, never of its transcripts (they may be large, and are read again at every
    start-up otherwise)."""
    return adapter_of(location).read(
        location,
        max_bytes=rules.max_bytes,
        cache=cache,
        admit=lambda root: refuse_excluded(location.session_id, root, rules),
    )


def map_files(
    files: ReadFiles,
    approvals: Approvals,
    extra: Sequence[RawFile],
    helpers: Helpers,
    rules: MapRules,
    cache: Any | None = None,
) -> tuple[Prepared, Any]:
    """Map, flag and validate a session's files (``extra``: files read besides them, for the vault)."""
    location = files.location
    try:
        mapped, cache = adapter_of(location).map(files, approvals, cache, helpers)
        mapped = flag_session(mapped, rules.flag_memo)
        memo = rules.valid_memo
        valid = mapped.validate(memo.take(location.session_id) if memo is not None else None)
        if memo is not None:
            memo.keep(location.session_id, valid)
    except SchemaError as exc:
        raise SourceError(str(location.where), f"maps to invalid records: {exc.problems[0]}") from None
    return Prepared(mapped, files, tuple(extra)), cache


def prepare(
    files: ReadFiles,
    stored: Approvals | None,
    helpers: Helpers,
    rules: MapRules,
    cache: Any | None = None,
) -> tuple[Prepared, Any]:
    """Map a session just read. ``stored`` is the approval snapshot the store kept for it;
    None for a session not stored yet: its snapshot is taken now, and its settings file
    goes to the vault with the session's files."""
    extra: list[RawFile] = []
    approvals = stored
    if approvals is None:
        approvals, settings_file = adapter_of(files.location).approvals(files, max_bytes=rules.max_bytes)
        if settings_file is not None:
            extra.append(settings_file)
    return map_files(files, approvals, extra, helpers, rules, cache)


def prepare_location(location: Location, known: Known, helpers: Helpers, rules: MapRules) -> Mapped:
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
