"""What an agent adapter hands to the store: v1.2 records plus the store's own columns.

Records are plain JSON-ready dicts (the v1.2 shapes of ``postrun.schema``). A step
is wrapped in a ``StepRow`` that carries its canonical JSON and a content digest,
computed once when the step is mapped, so an unchanged step costs nothing to
compare or re-write on the next ingest.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from postrun import schema
from postrun.errors import SourceError
from postrun.prefix import same_prefix


def canonical_json(value: Any) -> bytes:
    """The one serialization used for storing and hashing records (sorted keys)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def digest(blob: bytes) -> str:
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class StepRow:
    """A validated v1.2 step with its canonical JSON and digest."""

    record: dict[str, Any]
    blob: bytes
    digest: str
    id: str

    @classmethod
    def build(cls, record: dict[str, Any]) -> StepRow:
        """Validate ``record`` (raises ``schema.SchemaError``) and serialize it once."""
        if not schema.plainly_valid_step(record):
            # The models judge it, and name the problem at a path made only then.
            seq = record.get("seq")
            where = f"steps[{seq}]" if type(seq) is int else f"step {record.get('id')!r}"
            problems = schema.model_problems("step", record, where)
            if problems:
                raise schema.SchemaError(problems)
        # orjson hands back its whole output buffer, often many times the JSON's length; rows
        # live on in a capture's mapping cache, so they keep an exact copy.
        blob = bytes(memoryview(canonical_json(record)))
        return cls(record, blob, digest(blob), str(record["id"]))

    @classmethod
    def stored(cls, blob: str | bytes) -> StepRow:
        """A step as the store kept it (validated when it was mapped)."""
        data = blob.encode() if isinstance(blob, str) else blob
        record = orjson.loads(data)
        return cls(record, data, digest(data), str(record["id"]))

    def with_fields(self, **changes: Any) -> StepRow:
        """This step with some top-level fields replaced by values of the same, valid kind
        (a new place in the session: ``seq``, ``turn_id``, ``segment_index``, ``payload``)."""
        if all(self.record.get(key) == value for key, value in changes.items()):
            return self
        record = {**self.record, **changes}
        blob = bytes(memoryview(canonical_json(record)))
        return StepRow(record, blob, digest(blob), self.id)


class PickledByFields:
    """A slotted dataclass pickled as its class and field values, rebuilt by its ``__init__``:
    the default for slots (a state dict made and read back in Python) took twice as long, and
    an ingest process's every reply carries these to the writer."""

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]]  # the dataclass's fields, in ``__init__``'s order

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), tuple(map(self.__getattribute__, self.__match_args__))


@dataclass(frozen=True, slots=True)
class SourceFile(PickledByFields):
    """A file a session was read from, with the fingerprint seen when it was read."""

    path: str
    size: int
    mtime_ns: int
    ino: int


@dataclass(frozen=True, slots=True)
class RawFile:
    """The bytes of one source file exactly as they were read and parsed, for the vault."""

    name: str  # relative to the agent's data folder: ``sessions/<id>/<id>.messages.json``
    data: bytes
    fingerprint: SourceFile  # what was seen when it was read (its path is where)
    settings: bool = False  # the approval settings file, read at a session's first ingest only


@dataclass(frozen=True, slots=True)
class PackedFile(PickledByFields):
    """A raw file as an ingest process hands it to the vault: hashed and compressed beside the
    writer, which only stores it. ``dictionary``: the id and content hash of the vault's
    dictionary it was compressed with (None: none)."""

    name: str
    size: int  # raw bytes
    hash: str  # SHA-256 of the raw bytes
    blob: bytes  # zstd
    dictionary: tuple[int, str] | None
    fingerprint: SourceFile
    settings: bool = False


# What the vault is given to keep: the bytes as read, or packed by an ingest process.
RawCopy = RawFile | PackedFile


@dataclass(frozen=True, slots=True)
class SessionExtras(PickledByFields):
    """Facts users want in lists and ``show`` that are not v1.2 session fields."""

    model: str | None = None
    provider: str | None = None
    agent_title: str | None = None  # Cline's own metadata.title (stored as cline_title)
    agent_status: str | None = None  # Cline's manifest status
    git_branch: str | None = None


@dataclass(frozen=True, slots=True)
class StoredActor:
    """What the store holds of one actor: its record, its steps in order, its own usage."""

    record: dict[str, Any]
    steps: tuple[StepRow, ...]
    metrics: dict[str, Any] | None  # a v1.2 ``metrics`` value; None when it reported none


@dataclass(frozen=True)
class MappedSession:
    """One session as an adapter produced it, ready to be validated and stored."""

    agent: str
    session: dict[str, Any]
    segments: list[dict[str, Any]]
    actors: list[dict[str, Any]]
    turns: list[dict[str, Any]]
    steps: list[StepRow]
    extras: SessionExtras = field(default_factory=SessionExtras)
    # The approval settings that decided the steps' ``decision`` values; stored at
    # the first ingest and handed back to the adapter on later ones.
    approvals: dict[str, Any] = field(default_factory=dict)
    source_files: tuple[SourceFile, ...] = ()
    # Each helper actor's own usage (a v1.2 ``metrics`` value; the session's includes it).
    helper_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Files of the session that could not be used this time (a torn helper transcript):
    # what the store holds of them is carried over as it is.
    unread: tuple[SourceError, ...] = ()
    # What each read step's read returned (step id -> text), which the agent sent to its model:
    # the flagger scans it for secrets (the read step gets ``secret_in_output`` with the masked
    # match) and drops it; it is never stored, and a step without an entry is simply not scanned.
    # A text no secret rule can match (``postrun.review.secrets.may_hold_secrets`` is False) may
    # be left out: the flags are the same, and a mapping cache need not keep it.
    read_texts: dict[str, str] = field(default_factory=dict)
    # Source files whose last line was not complete yet (an agent caught writing it): what
    # came before it was mapped; that line is read again at the next change.
    incomplete: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return str(self.session["id"])

    def problems(self, valid: Validated | None = None) -> list[str]:
        """Schema problems of the non-step records and of every reference.

        Steps are validated when their ``StepRow`` is built. ``valid``: what an earlier check
        of the session found valid (``validate``); a segment, actor or turn equal to the one at
        its place there is not checked again, nor are the references of its steps when they
        come first (a live session's re-ingest adds to its last turns and steps).
        """
        return self._checked(valid)[0]

    def validate(self, valid: Validated | None = None) -> Validated:
        """Raise SchemaError on any of ``problems``; else what was found valid, for the next check."""
        found, steps = self._checked(valid)
        if found:
            raise schema.SchemaError(found)
        return Validated(self.turns, steps, self.segments, self.actors, tuple(self.steps))

    def _checked(self, valid: Validated | None) -> tuple[list[str], schema.ConsistentSteps | None]:
        found = schema.record_problems("session", self.session)
        for kind, key, records, known in (
            ("segment", "segments", self.segments, valid.segments if valid is not None else ()),
            ("actor", "actors", self.actors, valid.actors if valid is not None else ()),
            ("turn", "turns", self.turns, valid.turns if valid is not None else ()),
        ):
            for i, record in enumerate(records):
                if i < len(known) and (known[i] is record or known[i] == record):
                    continue
                found += schema.record_problems(kind, record, f"{key}[{i}]")
        if found:
            return found, None
        consistent = None if valid is None else valid.steps
        # The records of the rows the last check had at the start are its own, as they stand.
        shared = same_prefix(self.steps, valid.rows) if valid is not None and consistent is not None else 0
        kept = consistent.steps[:shared] if consistent is not None else ()
        steps: list[Mapping[str, Any]] = [*kept, *(row.record for row in self.steps[shared:])]
        return schema.checked_references(self.session, self.segments, self.actors, self.turns, steps, consistent)


@dataclass(frozen=True, slots=True)
class Validated:
    """What a check of a session found valid: its turns, its steps' references (None when
    they were not found consistent at once), its segments and actors, and the rows checked."""

    turns: Sequence[Any] = ()
    steps: schema.ConsistentSteps | None = None
    segments: Sequence[Any] = ()
    actors: Sequence[Any] = ()
    rows: Sequence[StepRow] = ()


def summed_metrics(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The v1.2 ``metrics`` of several actors together; None when none reported any."""
    present = [part for part in parts if part is not None]
    if not present:
        return None
    tokens: dict[str, int] = {}
    for part in present:
        for name, count in part["tokens"].items():
            tokens[name] = tokens.get(name, 0) + count
    return {
        "cost_usd": math.fsum(part["cost_usd"] for part in present),
        "api_requests": sum(part["api_requests"] for part in present),
        "tokens": tokens,
    }
