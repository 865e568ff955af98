"""JSON Lines as an agent appends them: each complete line parsed, an incomplete last one left.

A line is complete when a newline ends it and it parses; the last line of what was read
that is not complete (no newline yet, or not JSON yet) is left for the next read, which
starts at ``Lines.end``. A line that does not parse but has lines after it will never be
completed: it is skipped, never an error. So is a line whose value is not an object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from postrun.errors import SourceError
from postrun.jsonio import parse_json


@dataclass(frozen=True, slots=True)
class Lines:
    records: list[tuple[int, dict[str, Any]]]  # (where the line starts in the file, its object)
    end: int  # just after the last line used (complete or skipped): where the next read starts
    incomplete: bool  # bytes after ``end`` that are not a complete line yet
    skipped: int  # lines that will never parse as objects


def parse_lines(data: bytes | memoryview, start: int) -> Lines:
    """The lines of ``data``, which begins at offset ``start`` of its file."""
    blob = bytes(data) if isinstance(data, memoryview) else data
    records: list[tuple[int, dict[str, Any]]] = []
    skipped = 0
    position = 0
    size = len(blob)
    loads = orjson.loads
    while position < size:
        newline = blob.find(b"\n", position)
        if newline < 0:
            return Lines(records, start + position, True, skipped)
        line = blob[position:newline]
        offset = start + position
        position = newline + 1
        if not line.strip():
            continue
        try:
            value = loads(line)
        except orjson.JSONDecodeError as exc:
            value = _lenient(line, exc)
        if isinstance(value, dict):
            records.append((offset, value))
        elif position >= size and value is _NOT_JSON:
            # The last line: perhaps still being written (a writer's newline may come first).
            return Lines(records, offset, True, skipped)
        else:
            skipped += 1
    return Lines(records, start + position, False, skipped)


_NOT_JSON: Any = object()


def _lenient(line: bytes, exc: orjson.JSONDecodeError) -> Any:
    """A line orjson refuses only for its text (bad UTF-8, lone surrogates) is read leniently."""
    if "UTF-8" not in exc.msg and "surrogate" not in exc.msg:
        return _NOT_JSON
    try:
        return parse_json(line, "line", "transcript")
    except SourceError:
        return _NOT_JSON
