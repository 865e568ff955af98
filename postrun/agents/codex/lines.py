"""A rollout's records, one JSON object a line (``postrun.jsonl``), each with its line number.

A line's number (0-based, every physical line counted, skipped ones too) orders the steps
of its thread and names what has no id of its own (``line-<n>``): Codex only appends, so it
never changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from postrun.jsonl import parse_lines

# Codex before its record envelope (the CLIs of mid 2025) wrote a bare header ``{id, timestamp,
# instructions, cwd?, cli_version?, git?}`` first, then ``{"record_type": "state"}`` markers and
# the history's items bare (no ``payload``, no timestamp): read as the envelope's records.
BARE_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)


class Line(NamedTuple):
    """One record: its line number in the file and its envelope."""

    number: int
    type: str
    payload: dict[str, Any]
    timestamp: Any  # as written; checked where it is used


@dataclass(frozen=True, slots=True)
class Parsed:
    """The records of what was read, up to where it is complete."""

    lines: tuple[Line, ...]
    end: int  # file offset just after the last line used: where the next read starts
    count: int  # physical lines used, skipped ones included
    incomplete: bool  # a last line is not complete yet (no newline, or does not parse)


def rollout_lines(data: bytes | memoryview, start: int, first_number: int) -> Parsed:
    """The records of ``data`` (from file offset ``start``), the first line being ``first_number``."""
    blob = bytes(data)
    found = parse_lines(blob, start)
    lines: list[Line] = []
    number, position = first_number, 0
    for offset, value in found.records:
        number += blob.count(b"\n", position, offset - start)
        position = offset - start
        kind, payload = value.get("type"), value.get("payload")
        if isinstance(kind, str) and isinstance(payload, dict):
            lines.append(Line(number, kind, payload, value.get("timestamp")))
        elif payload is None:
            bare = _bare(value, kind, number)
            if bare is not None:
                lines.append(bare)
    count = blob.count(b"\n", 0, found.end - start)
    return Parsed(tuple(lines), found.end, count, found.incomplete)


def _bare(value: dict[str, Any], kind: Any, number: int) -> Line | None:
    """A line of a rollout from before the envelope, as the record it would be in one."""
    if isinstance(kind, str) and kind in BARE_ITEMS:
        return Line(number, "response_item", value, value.get("timestamp"))
    if number == 0 and kind is None and isinstance(value.get("id"), str):
        return Line(number, "session_meta", value, value.get("timestamp"))
    return None


def first_line(data: bytes) -> Line | None:
    """The first record of a rollout when its first line is complete and is one."""
    parsed = rollout_lines(data[: data.find(b"\n") + 1], 0, 0)
    return parsed.lines[0] if parsed.lines and parsed.lines[0].number == 0 else None
