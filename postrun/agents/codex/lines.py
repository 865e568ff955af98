"""A rollout's bytes as its records, one JSON object a line, read as far as it is complete.

Codex appends a line at a time. The part after the last newline is not written yet; so is
a last complete line that does not parse (caught mid-write): both are left for the next
read. A line in the middle that is not a record (junk, a wrong shape, nesting deeper than
the parser takes) is skipped, never an error: the lines around it still count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson


class Line(NamedTuple):
    """One record: its place in the file (0-based, every physical line counted), its envelope."""

    number: int
    type: str
    payload: dict[str, Any]
    timestamp: Any  # as written; checked where it is used


@dataclass(frozen=True, slots=True)
class Parsed:
    """The records of ``data`` up to where it is complete."""

    lines: tuple[Line, ...]
    consumed: int  # bytes of ``data`` used (the next read starts here)
    count: int  # physical lines consumed, skipped ones included
    waiting: bool  # a line at the end is not complete yet (no newline, or does not parse)


def parse_lines(data: bytes, first_index: int) -> Parsed:
    """The records of the complete lines of ``data``, the first being line ``first_index``."""
    end = data.rfind(b"\n") + 1
    if end == 0:
        return Parsed((), 0, 0, bool(data))
    chunks = data[:end].split(b"\n")
    chunks.pop()  # the empty piece after the last newline
    lines: list[Line] = []
    last = len(chunks) - 1
    consumed = end
    count = len(chunks)
    waiting = end < len(data)
    for number, chunk in enumerate(chunks):
        if not chunk:
            continue
        try:
            value = orjson.loads(chunk)
        except orjson.JSONDecodeError:
            if number == last and not waiting:
                # The last line of what is there: most likely caught while it is written.
                consumed -= len(chunk) + 1
                count -= 1
                waiting = True
            continue
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        payload = value.get("payload")
        if isinstance(kind, str) and isinstance(payload, dict):
            lines.append(Line(first_index + number, kind, payload, value.get("timestamp")))
    return Parsed(tuple(lines), consumed, count, waiting)


def first_line(data: bytes) -> Line | None:
    """The first record of a rollout when its first line is complete and is one."""
    parsed = parse_lines(data[: data.find(b"\n") + 1], 0)
    return parsed.lines[0] if parsed.lines and parsed.lines[0].number == 0 else None
