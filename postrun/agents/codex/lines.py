"""A rollout's records, one JSON object a line (``postrun.jsonl``), each with its line number.

A line's number (0-based, every physical line counted, skipped ones too) orders the steps
of its thread and names what has no id of its own (``line-<n>``): Codex only appends, so it
never changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from postrun.jsonl import parse_lines


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
    count = blob.count(b"\n", 0, found.end - start)
    return Parsed(tuple(lines), found.end, count, found.incomplete)


def first_line(data: bytes) -> Line | None:
    """The first record of a rollout when its first line is complete and is one."""
    parsed = rollout_lines(data[: data.find(b"\n") + 1], 0, 0)
    return parsed.lines[0] if parsed.lines and parsed.lines[0].number == 0 else None
