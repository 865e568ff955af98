"""The Postrun event schema, version 1.2, as typed models with strict validation.

Rules that hold for every record (see the schema document):

- unknown fields are errors, except inside ``OtherPayload.raw`` and
  ``EditPayload.structured_patch``, which are open on purpose;
- an optional field is either present with a real value or absent: ``null``
  is rejected with ``must be omitted, not null``;
- timestamps are ISO 8601 date-times that carry a zone;
- closed enums accept only their values, open enums any non-empty string.

Failures are reported as ``<field path>: <message>``, for example
``steps[3].payload.exit_code: required``. Validation works on plain dicts (what
the adapter produces and the store keeps) and returns nothing: the records stay
dicts, so what is validated is exactly what is written.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

SCHEMA_VERSION = "1.2"

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_TIMESTAMP_MESSAGE = "expected ISO 8601 date-time with timezone"


class SchemaError(ValueError):
    """One or more records break the schema; ``problems`` are ``path: message`` lines."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def _check_timestamp(value: str) -> str:
    if not _TIMESTAMP.fullmatch(value):
        raise ValueError(_TIMESTAMP_MESSAGE)
    try:
        # A time whose UTC form falls outside years 1 to 9999 cannot be stored (times are kept in UTC).
        datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(_TIMESTAMP_MESSAGE) from None
    return value


Timestamp = Annotated[str, AfterValidator(_check_timestamp)]
NonEmpty = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class _Record(BaseModel):
    """Base of every modelled object: strict types, no unknown fields, no nulls."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_null(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            name = info.field_name
            required = name is not None and cls.model_fields[name].is_required()
            raise ValueError("must not be null" if required else "must be omitted, not null")
        return value


class Agent(_Record):
    kind: NonEmpty
    version: str
    format_version: str | None = None


class Workspace(_Record):
    root: str
    repo: str | None = None


class Tokens(_Record):
    input: Count
    output: Count
    cache_read: Count
    cache_creation: Count


class Metrics(_Record):
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    api_requests: Count
    tokens: Tokens


class Session(_Record):
    id: NonEmpty
    agent: Agent
    workspace: Workspace
    started_at: Timestamp
    ended_at: Timestamp | None = None
    source: str | None = None
    metrics: Metrics | None = None


class Segment(_Record):
    index: Count
    start_reason: NonEmpty
    started_at: Timestamp
    ended_at: Timestamp | None = None
    source_files: list[str]


class Actor(_Record):
    id: NonEmpty
    parent_id: NonEmpty | None = None
    type: NonEmpty
    label: str | None = None


class Turn(_Record):
    id: NonEmpty
    session_id: NonEmpty
    segment_index: Count
    actor_id: NonEmpty
    index: Count
    prompt_id: str | None = None
    mode: str | None = None
    started_at: Timestamp
    step_ids: list[str]


class Flag(_Record):
    kind: NonEmpty
    severity: Literal["info", "warn", "danger"]
    reason: str


class StepError(_Record):
    type: NonEmpty
    message: str


class CommandPayload(_Record):
    command: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    exit_code: int | None = None
    cwd: str | None = None
    output_ref: str | None = None


class EditPayload(_Record):
    path: NonEmpty
    old_string: str | None = None
    new_string: str | None = None
    structured_patch: Any = None
    is_full_write: bool
    landed_in_final_state: bool | None = None


class ReadPayload(_Record):
    path: NonEmpty
    range: Annotated[list[int], Field(min_length=2, max_length=2)] | None = None


class MessagePayload(_Record):
    role: NonEmpty
    text: str | None = None
    text_ref: str | None = None


class OtherPayload(_Record):
    tool_name: NonEmpty
    raw: dict[str, Any]


StepType = Literal["command", "edit", "read", "message", "other"]

PAYLOAD_MODELS: dict[str, type[_Record]] = {
    "command": CommandPayload,
    "edit": EditPayload,
    "read": ReadPayload,
    "message": MessagePayload,
    "other": OtherPayload,
}


class Step(_Record):
    id: NonEmpty
    session_id: NonEmpty
    segment_index: Count
    turn_id: NonEmpty
    actor_id: NonEmpty
    seq: Count
    at: Timestamp
    type: StepType
    decision: NonEmpty
    outcome: NonEmpty
    content_status: Literal["inline", "reference_only"]
    error: StepError | None = None
    channels: list[str]
    flags: list[Flag]
    # The payload's shape depends on ``type``; it is checked against PAYLOAD_MODELS.
    payload: dict[str, Any]


_MODELS: dict[str, type[_Record]] = {
    "session": Session,
    "segment": Segment,
    "actor": Actor,
    "turn": Turn,
    "step": Step,
}


def _join(prefix: str, loc: Iterable[int | str]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def _message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in {"literal_error", "enum"}:
        return f"not one of the allowed values ({error['ctx'].get('expected', '')})"
    if kind == "string_too_short":
        return "must not be empty"
    message = str(error["msg"]).removeprefix("Value error, ")
    return message.replace("Input should be", "should be")


def _problems(model: type[_Record], data: Any, path: str) -> list[str]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        problems: list[str] = []
        for error in exc.errors(include_url=False):
            problems.append(f"{_join(path, error['loc'])}: {_message(error)}")
        return problems
    return []


def record_problems(kind: str, data: Any, path: str | None = None) -> list[str]:
    """Return the schema problems of one record of ``kind`` (empty when valid)."""
    if _PLAINLY_VALID[kind](data):
        return []
    return model_problems(kind, data, path)


def model_problems(kind: str, data: Any, path: str | None = None) -> list[str]:
    """``record_problems`` as the models alone find them."""
    path = kind if path is None else path
    problems = _problems(_MODELS[kind], data, path)
    if kind == "step" and not problems:
        payload_model = PAYLOAD_MODELS[data["type"]]
        problems = _problems(payload_model, data["payload"], f"{path}.payload")
    return problems


# A shortcut for the steps an adapter maps by the thousand: plain checks that accept only
# steps the models accept (every doubt is left to the models, which then name the problem).
# The models run a Python callback per field (the null check), about 6 µs a step.
_STEP_KEYS = frozenset(Step.model_fields) - {"error"}
_STEP_KEYS_WITH_ERROR = frozenset(Step.model_fields)
_NAMES = ("id", "session_id", "turn_id", "actor_id", "decision", "outcome")
_SEVERITIES = frozenset({"info", "warn", "danger"})
_CONTENT_STATUSES = frozenset({"inline", "reference_only"})
_FLAG_KEYS = frozenset(Flag.model_fields)
_ERROR_KEYS = frozenset(StepError.model_fields)
_COMMAND_TEXTS = frozenset({"command", "stdout", "stderr", "cwd", "output_ref"})
_EDIT_TEXTS = frozenset({"old_string", "new_string"})


def _name(value: Any) -> bool:
    """A non-empty ``str`` the models take (they refuse a lone surrogate in a constrained one)."""
    if type(value) is not str or not value:
        return False
    if value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def is_timestamp(value: str) -> bool:
    """Whether ``value`` is a v1.2 timestamp (what ``Timestamp`` accepts)."""
    # Mapped steps' times are ``2026-09-21T14:13:19.500Z``, nearly each a different one: the
    # clock of such a time is valid by its digits alone, so only its day (few per session)
    # is left to the full check, which a zone of Z never moves out of its year.
    if (
        len(value) == 24
        and value.isascii()
        and value[10] == "T"
        and value[13] == value[16] == ":"
        and value[19] == "."
        and value[23] == "Z"
        and _clock_digits(value[11:13], value[14:16], value[17:19], value[20:23])
    ):
        return _full_timestamp(f"{value[:10]}T00:00:00Z")
    return _full_timestamp(value)


def _clock_digits(hours: str, minutes: str, seconds: str, millis: str) -> bool:
    return (
        "00" <= hours <= "23"
        and "00" <= minutes <= "59"
        and "00" <= seconds <= "59"
        and millis.isdigit()
        and hours.isdigit()
        and minutes.isdigit()
        and seconds.isdigit()
    )


@functools.lru_cache(maxsize=1024)
def _full_timestamp(value: str) -> bool:
    try:
        _check_timestamp(value)
    except ValueError:
        return False
    return True


def plainly_valid_step(step: Any) -> bool:
    """True only for a step every model accepts; False means "ask the models" (maybe valid)."""
    if type(step) is not dict:
        return False
    keys = step.keys()
    if keys != _STEP_KEYS and keys != _STEP_KEYS_WITH_ERROR:
        return False
    for name in _NAMES:
        value = step[name]  # ``_name``, without a call per field
        if type(value) is not str or not value or not (value.isascii() or _name(value)):
            return False
    segment_index, seq = step["segment_index"], step["seq"]
    if type(segment_index) is not int or segment_index < 0 or type(seq) is not int or seq < 0:
        return False
    at, content_status, channels, flags = step["at"], step["content_status"], step["channels"], step["flags"]
    if type(at) is not str or not is_timestamp(at):
        return False
    if type(content_status) is not str or content_status not in _CONTENT_STATUSES:
        return False
    if type(channels) is not list or type(flags) is not list:
        return False
    for channel in channels:  # loops, not all(): a generator costs more than these short lists
        if type(channel) is not str:
            return False
    for flag in flags:
        if not _plain_flag(flag):
            return False
    if "error" in step:
        error = step["error"]
        if type(error) is not dict or error.keys() != _ERROR_KEYS:
            return False
        if not _name(error["type"]) or type(error["message"]) is not str:
            return False
    step_type, payload = step["type"], step["payload"]
    if type(step_type) is not str or type(payload) is not dict:
        return False
    check = _PLAIN_PAYLOADS.get(step_type)
    return check is not None and check(payload)


def _plain_flag(flag: Any) -> bool:
    return (
        type(flag) is dict
        and flag.keys() == _FLAG_KEYS
        and _name(flag["kind"])
        and type(flag["severity"]) is str
        and flag["severity"] in _SEVERITIES
        and type(flag["reason"]) is str
    )


def _plain_command(payload: dict[Any, Any]) -> bool:
    for key, value in payload.items():
        if key in _COMMAND_TEXTS:
            if type(value) is not str:
                return False
        elif key != "exit_code" or type(value) is not int:
            return False
    return True


def _plain_edit(payload: dict[Any, Any]) -> bool:
    if not _name(payload.get("path")) or type(payload.get("is_full_write")) is not bool:
        return False
    for key, value in payload.items():
        if key in _EDIT_TEXTS:
            if type(value) is not str:
                return False
        elif key == "landed_in_final_state":
            if type(value) is not bool:
                return False
        elif key == "structured_patch":
            if value is None:
                return False
        elif key not in ("path", "is_full_write"):
            return False
    return True


def _plain_read(payload: dict[Any, Any]) -> bool:
    if not _name(payload.get("path")):
        return False
    if "range" in payload:
        line_range = payload["range"]
        if type(line_range) is not list or len(line_range) != 2 or not all(type(n) is int for n in line_range):
            return False
        return len(payload) == 2
    return len(payload) == 1


def _plain_message(payload: dict[Any, Any]) -> bool:
    if not _name(payload.get("role")):
        return False
    for key, value in payload.items():
        if key in ("text", "text_ref"):
            if type(value) is not str:
                return False
        elif key != "role":
            return False
    return True


def _plain_other(payload: dict[Any, Any]) -> bool:
    raw = payload.get("raw")
    return (
        len(payload) == 2
        and _name(payload.get("tool_name"))
        and type(raw) is dict
        and all(_name(key) or key == "" for key in raw)
    )


_PLAIN_PAYLOADS: dict[str, Callable[[dict[Any, Any]], bool]] = {
    "command": _plain_command,
    "edit": _plain_edit,
    "read": _plain_read,
    "message": _plain_message,
    "other": _plain_other,
}


# The same shortcut for the few other records of a session (the session's model alone costs
# about 5 µs): every field of each model, required or optional, with its plain check.
_Check = Callable[[Any], bool]


def _text(value: Any) -> bool:
    return type(value) is str


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _time(value: Any) -> bool:
    return type(value) is str and is_timestamp(value)


def _texts(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _cost(value: Any) -> bool:
    return type(value) is float and math.isfinite(value) and value >= 0


def _plain_record(required: dict[str, _Check], optional: dict[str, _Check]) -> _Check:
    checks = {**required, **optional}
    needed = frozenset(required)

    def check(value: Any) -> bool:
        if type(value) is not dict or not needed <= value.keys():
            return False
        for key, item in value.items():
            field_check = checks.get(key)
            if field_check is None or not field_check(item):
                return False
        return True

    return check


_TOKENS = _plain_record(dict.fromkeys(("input", "output", "cache_read", "cache_creation"), _count), {})
PLAIN_FIELDS: dict[type[_Record], tuple[dict[str, _Check], dict[str, _Check]]] = {
    Agent: ({"kind": _name, "version": _text}, {"format_version": _text}),
    Workspace: ({"root": _text}, {"repo": _text}),
    Tokens: (dict.fromkeys(("input", "output", "cache_read", "cache_creation"), _count), {}),
    Metrics: ({"cost_usd": _cost, "api_requests": _count, "tokens": _TOKENS}, {}),
    Segment: (
        {"index": _count, "start_reason": _name, "started_at": _time, "source_files": _texts},
        {"ended_at": _time},
    ),
    Actor: ({"id": _name, "type": _name}, {"parent_id": _name, "label": _text}),
    Turn: (
        {"id": _name, "session_id": _name, "segment_index": _count, "actor_id": _name, "index": _count}
        | {"started_at": _time, "step_ids": _texts},
        {"prompt_id": _text, "mode": _text},
    ),
}
PLAIN_FIELDS[Session] = (
    {"id": _name, "started_at": _time}
    | {"agent": _plain_record(*PLAIN_FIELDS[Agent]), "workspace": _plain_record(*PLAIN_FIELDS[Workspace])},
    {"ended_at": _time, "source": _text, "metrics": _plain_record(*PLAIN_FIELDS[Metrics])},
)
_PLAINLY_VALID: dict[str, _Check] = {
    "session": _plain_record(*PLAIN_FIELDS[Session]),
    "segment": _plain_record(*PLAIN_FIELDS[Segment]),
    "actor": _plain_record(*PLAIN_FIELDS[Actor]),
    "turn": _plain_record(*PLAIN_FIELDS[Turn]),
    "step": plainly_valid_step,
}


def plainly_valid(kind: str, data: Any) -> bool:
    """True only for a record of ``kind`` every model accepts; False means "ask the models"."""
    return _PLAINLY_VALID[kind](data)


def validate_record(kind: str, data: Any, path: str | None = None) -> None:
    """Raise SchemaError when one record of ``kind`` breaks the schema."""
    problems = record_problems(kind, data, path)
    if problems:
        raise SchemaError(problems)


def reference_problems(
    session: Mapping[str, Any],
    segments: Sequence[Mapping[str, Any]],
    actors: Sequence[Mapping[str, Any]],
    turns: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
) -> list[str]:
    """Check the references between already shape-valid records of one session."""
    problems: list[str] = []
    session_id = session["id"]
    segment_indexes: set[int] = set()
    for i, segment in enumerate(segments):
        if segment["index"] in segment_indexes:
            problems.append(f"segments[{i}].index: duplicate {segment['index']}")
        segment_indexes.add(segment["index"])
    actor_ids = {actor["id"] for actor in actors}
    if len(actor_ids) != len(actors):
        problems.append("actors: duplicate id")
    for i, actor in enumerate(actors):
        if "parent_id" in actor and actor["parent_id"] not in actor_ids:
            problems.append(f"actors[{i}].parent_id: names no actor of the session")
    turn_ids: set[str] = set()
    for i, turn in enumerate(turns):
        if turn["session_id"] != session_id:
            problems.append(f"turns[{i}].session_id: differs from session.id")
        if turn["segment_index"] not in segment_indexes:
            problems.append(f"turns[{i}].segment_index: names no segment of the session")
        if turn["actor_id"] not in actor_ids:
            problems.append(f"turns[{i}].actor_id: names no actor of the session")
        if turn["id"] in turn_ids:
            problems.append(f"turns[{i}].id: duplicate {turn['id']}")
        turn_ids.add(turn["id"])
    if _steps_consistent(steps, session_id, turn_ids, actor_ids, segment_indexes):
        return problems
    seqs: set[int] = set()
    step_ids: set[str] = set()
    for i, step in enumerate(steps):
        if step["session_id"] != session_id:
            problems.append(f"steps[{i}].session_id: differs from session.id")
        if step["turn_id"] not in turn_ids:
            problems.append(f"steps[{i}].turn_id: names no turn of the session")
        if step["actor_id"] not in actor_ids:
            problems.append(f"steps[{i}].actor_id: names no actor of the session")
        if step["segment_index"] not in segment_indexes:
            problems.append(f"steps[{i}].segment_index: names no segment of the session")
        if step["seq"] in seqs:
            problems.append(f"steps[{i}].seq: duplicate {step['seq']}")
        seqs.add(step["seq"])
        if step["id"] in step_ids:
            problems.append(f"steps[{i}].id: duplicate {step['id']}")
        step_ids.add(step["id"])
    return problems


def _steps_consistent(
    steps: Sequence[Mapping[str, Any]], session_id: Any, turn_ids: set[str], actor_ids: set[Any], segments: set[int]
) -> bool:
    """No step has a reference problem: six set operations instead of six tests per step
    (which then name the problems)."""
    return (
        {step["session_id"] for step in steps} <= {session_id}
        and {step["turn_id"] for step in steps} <= turn_ids
        and {step["actor_id"] for step in steps} <= actor_ids
        and {step["segment_index"] for step in steps} <= segments
        and len({step["seq"] for step in steps}) == len(steps)
        and len({step["id"] for step in steps}) == len(steps)
    )


_ENVELOPE_KEYS = ("schema_version", "session", "segments", "actors", "turns", "steps")


def envelope_problems(envelope: Any) -> list[str]:
    """Every problem of a whole export envelope: shapes first, then references."""
    if not isinstance(envelope, Mapping):
        return ["envelope: expected an object"]
    problems = [f"{key}: unknown field" for key in envelope if key not in _ENVELOPE_KEYS]
    problems += [f"{key}: required" for key in _ENVELOPE_KEYS if key not in envelope]
    if problems:
        return problems
    if envelope["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version: expected '{SCHEMA_VERSION}'")
    problems += record_problems("session", envelope["session"])
    for kind, key in (("segment", "segments"), ("actor", "actors"), ("turn", "turns"), ("step", "steps")):
        records = envelope[key]
        if not isinstance(records, list):
            problems.append(f"{key}: expected a list")
            continue
        for i, record in enumerate(records):
            problems += record_problems(kind, record, f"{key}[{i}]")
    if problems:
        return problems
    return reference_problems(
        envelope["session"], envelope["segments"], envelope["actors"], envelope["turns"], envelope["steps"]
    )


def validate_envelope(envelope: Any) -> None:
    """Raise SchemaError when an export envelope breaks the schema."""
    problems = envelope_problems(envelope)
    if problems:
        raise SchemaError(problems)
