"""Where a messages file's list of messages lies in the file's bytes.

Cline rewrites a session's file whole with one more message. Comparing the bytes of the
messages the last pass saw (one ``memcmp``) proves them unchanged far faster than
serializing every parsed message again. That proof rests on three facts about the last
file, kept as ``ByteLayout``: where its message list starts, where its last message ends,
and that this list is the document's ``messages`` (no second top-level key of that name,
whose value would win). Equal bytes parse to equal values, so when the new file's list
starts with those bytes, the messages they hold are unchanged. The same three facts are
checked on the new file before it is trusted, and kept for the next pass.

Pure functions over valid JSON (the bytes parsed already): outside a string, a bracket
is structure, and a string is found by its quotes and escapes alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

_SPACE = re.compile(rb"[ \t\n\r]*")
_FIRST = re.compile(rb"([ \t\n\r]*)")  # before a list's first element
_NEXT = re.compile(rb"[ \t\n\r]*,([ \t\n\r]*)")  # between two elements
_CLOSE = re.compile(rb"[ \t\n\r]*\]")
_COLON = re.compile(rb"[ \t\n\r]*:[ \t\n\r]*")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_QUOTE, _OPENERS = ord('"'), (ord("{"), ord("["))
_MESSAGES_KEY = b'"messages"'


@dataclass(frozen=True, slots=True)
class ByteLayout:
    """A file's bytes and where its message list lies in them (every message an object)."""

    data: bytes  # the file as read
    start: int  # its message list's "["
    end: int  # just after its last message (after the "[" when it has none)
    count: int  # messages in the list


def measure_list(
    data: bytes, bare: bool, messages: Sequence[Any], last: ByteLayout | None
) -> tuple[ByteLayout | None, bool]:
    """The layout of ``messages`` (the list as parsed from ``data``; ``bare``: the document is
    that list), and whether the list begins with the bytes of all of ``last``'s messages,
    which are then unchanged. (None, False) when the bytes cannot show the list as parsed.
    """
    start = list_start(data, bare)
    if start is None:
        return None, False
    if (
        last is not None
        and len(messages) >= last.count
        and data.startswith(memoryview(last.data)[last.start : last.end], start)
    ):
        layout = _extended(data, bare, start, start + last.end - last.start, last.count, messages)
        return layout, layout is not None
    return _extended(data, bare, start, start + 1, 0, messages), False


def list_start(data: bytes, bare: bool) -> int | None:
    """Offset of the message list's "[": the document when ``bare``, else the value of its
    first top-level ``messages`` key; None when there is none."""
    space = _SPACE.match(data)
    position = space.end() if space is not None else 0
    opener = data[position : position + 1]
    if bare:
        return position if opener == b"[" else None
    if opener != b"{":
        return None
    depth = 0
    for token in _TOKEN.finditer(data, position):
        first = data[token.start()]
        if first == _QUOTE:
            if depth == 1 and (colon := _COLON.match(data, token.end())) is not None and _names_messages(token[0]):
                value = colon.end()
                return value if data[value : value + 1] == b"[" else None
        elif first in _OPENERS:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return None
    return None


def _extended(data: bytes, bare: bool, start: int, end: int, count: int, messages: Sequence[Any]) -> ByteLayout | None:
    """The layout once the messages after the first ``count`` (which end at ``end``) are
    found in ``data``; None unless exactly ``messages`` follow and close the list, and the
    list is the document's only ``messages``."""
    position = end
    for index in range(count, len(messages)):
        gap = (_FIRST if index == 0 else _NEXT).match(data, position)
        if gap is None:
            return None
        found = _message_end(data, gap.end(), gap[1], messages[index])
        if found is None:
            return None
        position = found
    close = _CLOSE.match(data, position)
    if close is None or not (bare or _only_messages_key(data, close.end())):
        return None
    return ByteLayout(data, start, position, len(messages))


def _message_end(data: bytes, position: int, gap: bytes, message: Any) -> int | None:
    """Where the message starting at ``position`` ends; None when it is not an object.

    Cline writes ``JSON.stringify(document, null, 2)``: a message's bytes are then its
    two-space indented serialization, shifted by its own indent, and one compare finds its
    end. Other layouts are walked token by token."""
    if data[position : position + 1] != b"{":
        return None
    newline = gap.rfind(b"\n")
    try:
        if newline < 0:
            blob = orjson.dumps(message)
        else:
            blob = orjson.dumps(message, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n" + gap[newline + 1 :])
    except orjson.JSONEncodeError:  # e.g. nested deeper than orjson writes
        blob = b""
    if blob and data.startswith(blob, position):
        return position + len(blob)
    return _value_end(data, position)


def _value_end(data: bytes, position: int) -> int | None:
    """Just after the object or list that starts at ``position``."""
    depth = 0
    for token in _TOKEN.finditer(data, position):
        first = data[token.start()]
        if first == _QUOTE:
            continue
        depth += 1 if first in _OPENERS else -1
        if depth == 0:
            return token.end()
    return None


def _only_messages_key(data: bytes, position: int) -> bool:
    """Whether the top-level object, from ``position`` (just after its ``messages`` value) to
    its end, has no other ``messages`` key: a later one would be the value parsed."""
    depth = 1
    for token in _TOKEN.finditer(data, position):
        first = data[token.start()]
        if first == _QUOTE:
            if depth == 1 and _COLON.match(data, token.end()) is not None and _names_messages(token[0]):
                return False
        elif first in _OPENERS:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return True
    return False


def _names_messages(key: bytes) -> bool:
    if key == _MESSAGES_KEY:
        return True
    if b"\\" not in key:
        return False
    try:
        return bool(orjson.loads(key) == "messages")  # an escaped spelling of the same key
    except orjson.JSONDecodeError:
        return False  # not valid UTF-8: leniently decoded, it cannot read "messages"
