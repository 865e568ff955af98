"""A shortcut for the records an adapter maps by the thousand: plain type checks that accept
only what the models of ``postrun.schema.models`` accept, and leave every doubt to them.

The fields are named here, not read from the models, so that checking plainly never builds
them (a unit test holds the two to the same fields)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from postrun.schema.base import check_timestamp

# A shortcut for the steps an adapter maps by the thousand: plain checks that accept only
# steps the models accept (every doubt is left to the models, which then name the problem).
# The models run a Python callback per field (the null check), about 6 µs a step.
STEP_FIELDS = frozenset(
    {"id", "session_id", "segment_index", "turn_id", "actor_id", "seq", "at", "type", "decision", "outcome"}
    | {"content_status", "error", "channels", "flags", "payload"}
)
FLAG_FIELDS = frozenset(("kind", "severity", "reason"))
ERROR_FIELDS = frozenset(("type", "message"))
_STEP_KEYS = STEP_FIELDS - {"error"}
_STEP_KEYS_WITH_ERROR = STEP_FIELDS
_NAMES = ("id", "session_id", "turn_id", "actor_id", "decision", "outcome")
_SEVERITIES = frozenset({"info", "warn", "danger"})
_CONTENT_STATUSES = frozenset({"inline", "reference_only"})
_FLAG_KEYS = FLAG_FIELDS
_ERROR_KEYS = ERROR_FIELDS
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
        check_timestamp(value)
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
# By model name (``postrun.schema.models``): its required fields' checks, then its optional ones'.
PLAIN_FIELDS: dict[str, tuple[dict[str, _Check], dict[str, _Check]]] = {
    "Agent": ({"kind": _name, "version": _text}, {"format_version": _text}),
    "Workspace": ({"root": _text}, {"repo": _text}),
    "Tokens": (dict.fromkeys(("input", "output", "cache_read", "cache_creation"), _count), {}),
    "Metrics": ({"cost_usd": _cost, "api_requests": _count, "tokens": _TOKENS}, {}),
    "Segment": (
        {"index": _count, "start_reason": _name, "started_at": _time, "source_files": _texts},
        {"ended_at": _time},
    ),
    "Actor": ({"id": _name, "type": _name}, {"parent_id": _name, "label": _text}),
    "Turn": (
        {"id": _name, "session_id": _name, "segment_index": _count, "actor_id": _name, "index": _count}
        | {"started_at": _time, "step_ids": _texts},
        {"prompt_id": _text, "mode": _text},
    ),
}
PLAIN_FIELDS["Session"] = (
    {"id": _name, "started_at": _time}
    | {"agent": _plain_record(*PLAIN_FIELDS["Agent"]), "workspace": _plain_record(*PLAIN_FIELDS["Workspace"])},
    {"ended_at": _time, "source": _text, "metrics": _plain_record(*PLAIN_FIELDS["Metrics"])},
)
_PLAINLY_VALID: dict[str, _Check] = {
    "session": _plain_record(*PLAIN_FIELDS["Session"]),
    "segment": _plain_record(*PLAIN_FIELDS["Segment"]),
    "actor": _plain_record(*PLAIN_FIELDS["Actor"]),
    "turn": _plain_record(*PLAIN_FIELDS["Turn"]),
    "step": plainly_valid_step,
}


def plainly_valid(kind: str, data: Any) -> bool:
    """True only for a record of ``kind`` every model accepts; False means "ask the models"."""
    return _PLAINLY_VALID[kind](data)
