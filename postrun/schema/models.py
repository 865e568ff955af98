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

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from postrun.schema.base import check_timestamp

Timestamp = Annotated[str, AfterValidator(check_timestamp)]
NonEmpty = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class Record(BaseModel):
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


class Agent(Record):
    kind: NonEmpty  # an open enum: "cline", "claude-code" (and the agents added since)
    version: str
    format_version: str | None = None


class Workspace(Record):
    root: str
    repo: str | None = None


class Tokens(Record):
    input: Count
    output: Count
    cache_read: Count
    cache_creation: Count


class Metrics(Record):
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    api_requests: Count
    tokens: Tokens


class Session(Record):
    id: NonEmpty
    agent: Agent
    workspace: Workspace
    started_at: Timestamp
    ended_at: Timestamp | None = None
    source: str | None = None
    metrics: Metrics | None = None


class Segment(Record):
    index: Count
    start_reason: NonEmpty
    started_at: Timestamp
    ended_at: Timestamp | None = None
    source_files: list[str]


class Actor(Record):
    id: NonEmpty
    parent_id: NonEmpty | None = None
    type: NonEmpty
    label: str | None = None


class Turn(Record):
    id: NonEmpty
    session_id: NonEmpty
    segment_index: Count
    actor_id: NonEmpty
    index: Count
    prompt_id: str | None = None
    mode: str | None = None
    started_at: Timestamp
    step_ids: list[str]


class Flag(Record):
    kind: NonEmpty
    severity: Literal["info", "warn", "danger"]
    reason: str


class StepError(Record):
    type: NonEmpty
    message: str


class CommandPayload(Record):
    command: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    exit_code: int | None = None
    cwd: str | None = None
    output_ref: str | None = None


class EditPayload(Record):
    path: NonEmpty
    old_string: str | None = None
    new_string: str | None = None
    structured_patch: Any = None
    is_full_write: bool
    landed_in_final_state: bool | None = None


class ReadPayload(Record):
    path: NonEmpty
    range: Annotated[list[int], Field(min_length=2, max_length=2)] | None = None


class MessagePayload(Record):
    role: NonEmpty
    text: str | None = None
    text_ref: str | None = None


class OtherPayload(Record):
    tool_name: NonEmpty
    raw: dict[str, Any]


StepType = Literal["command", "edit", "read", "message", "other"]

PAYLOAD_MODELS: dict[str, type[Record]] = {
    "command": CommandPayload,
    "edit": EditPayload,
    "read": ReadPayload,
    "message": MessagePayload,
    "other": OtherPayload,
}


class Step(Record):
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


_MODELS: dict[str, type[Record]] = {
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


def _problems(model: type[Record], data: Any, path: str) -> list[str]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        problems: list[str] = []
        for error in exc.errors(include_url=False):
            problems.append(f"{_join(path, error['loc'])}: {_message(error)}")
        return problems
    return []


def model_problems(kind: str, data: Any, path: str | None = None) -> list[str]:
    """``record_problems`` as the models alone find them."""
    path = kind if path is None else path
    problems = _problems(_MODELS[kind], data, path)
    if kind == "step" and not problems:
        payload_model = PAYLOAD_MODELS[data["type"]]
        problems = _problems(payload_model, data["payload"], f"{path}.payload")
    return problems
