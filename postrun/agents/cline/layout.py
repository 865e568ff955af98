"""Where a messages file's list of messages lies in the file's bytes.

Cline rewrites a session's file whole with one more message. Comparing the bytes of the
messages the last pass saw (one ``memcmp``) proves them unchanged far faster than
serializing every parsed message again. That proof rests on three facts about the last
file, kept as ``ByteLayout``: where its message list starts, where its last message ends,
and that this list is the document's ``messages`` (no second top-level key of that name,
whose value would win). Equal bytes parse to equal values, so when the new file's list
starts with those bytes, the messages they hold are unchanged. The same three facts are
checked on the new file before it is trusted, and kept for the next pass.

A live pass goes further (``parse_without_known``): it parses the new file with those
bytes cut out, so only the new messages are parsed; a known message is parsed from its
own bytes (``bounds``) when the mapping needs it again.

Pure functions over valid JSON (the bytes parsed already, or the cut file's): outside a
string, a bracket is structure, and a string is found by its quotes and escapes alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

import orjson

from postrun.errors import SourceError
from postrun.jsonio import parse_json

_SPACE = re.compile(rb"[ \t\n\r]*")
_FIRST = re.compile(rb"([ \t\n\r]*)")  # before a list's first element
_NEXT = re.compile(rb"[ \t\n\r]*,([ \t\n\r]*)")  # between two elements
_CLOSE = re.compile(rb"[ \t\n\r]*\]")
_COLON = re.compile(rb"[ \t\n\r]*:[ \t\n\r]*")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_QUOTE, _OPENERS = ord('"'), (ord("{"), ord("["))
_MESSAGES_KEY = b'"messages"'


@dataclass(frozen=True, slots=True)
class ByteLayout:
    """A file's bytes and where its message list lies in them (every message an object)."""

    data: bytes  # the file as read
    start: int  # its message list's "["
    end: int  # just after its last message (after the "[" when it has none)
    count: int  # messages in the list
    bounds: tuple[int, ...]  # where each message starts and ends, from ``start``: two offsets a message
    # The messages' bytes are valid UTF-8 without escaped surrogates: the strict parser reads
    # them, alone as in the file (the lenient one, used for a whole file otherwise, reads
    # some numbers differently).
    strict: bool

    def message(self, position: int, where: str) -> Any:
        """The message at ``position`` parsed from its own bytes (equal to it as parsed in the file)."""
        first, last = self.bounds[2 * position] + self.start, self.bounds[2 * position + 1] + self.start
        return parse_json(self.data[first:last], where, "messages", lenient=False)


@dataclass(frozen=True, slots=True)
class KnownMessages:
    """A messages file parsed without the messages a last pass saw: they are still its
    first ones, byte for byte (``last``); ``layout`` is the new file's, all its messages included."""

    last: ByteLayout
    layout: ByteLayout


class LazyMessages(Sequence[Any]):
    """A file's messages: the known ones parsed from their bytes when first asked for
    (few are: a message is mapped again only when a later one answers its call), then
    the ones parsed with the file."""

    def __init__(self, known: KnownMessages, tail: list[Any], where: str) -> None:
        self._layout, self._count, self._tail, self._where = known.layout, known.last.count, tail, where
        self._parsed: dict[int, Any] = {}

    def __len__(self) -> int:
        return self._count + len(self._tail)

    @overload
    def __getitem__(self, position: int) -> Any: ...
    @overload
    def __getitem__(self, position: slice) -> Sequence[Any]: ...
    def __getitem__(self, position: int | slice) -> Any:
        if isinstance(position, slice):
            return [self[index] for index in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        if position >= self._count:
            return self._tail[position - self._count]
        if position < 0:
            raise IndexError(position)
        if position not in self._parsed:
            self._parsed[position] = self._layout.message(position, self._where)
        return self._parsed[position]


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
        layout = _extended(data, bare, start, last, messages[last.count :])
        return layout, layout is not None
    return _extended(data, bare, start, None, messages), False


def parse_without_known(data: bytes, last: ByteLayout, where: str) -> tuple[Any, KnownMessages] | None:
    """The document in ``data`` parsed with ``last``'s messages cut out, when its list still
    begins with their bytes: its messages are then only those after them. None when the
    bytes do not show that, or the rest does not parse (a full parse reports why, at its
    own offsets).

    Cut out, ``[known, rest]`` reads as ``[rest]`` and ``[known]`` as ``[]``. The messages
    parsed are then found in the whole file after the known ones, each after a comma, and
    closing the list (as a pass measures a list): only then do both parse alike.
    """
    space = _SPACE.match(data)
    bare = data[space.end() : space.end() + 1] == b"[" if space is not None else False
    start = list_start(data, bare)
    known = memoryview(last.data)[last.start : last.end]
    if start is None or last.count == 0 or not last.strict or not data.startswith(known, start):
        return None
    rest = data[start + len(known) :].lstrip(b" \t\n\r").removeprefix(b",")  # the new messages, the end
    try:
        document = parse_json(data[: start + 1] + rest, where, "messages", lenient=False)
    except SourceError:
        return None
    tail = document if bare else document.get("messages") if isinstance(document, dict) else None
    if not isinstance(tail, list):
        return None
    layout = _extended(data, bare, start, last, tail)
    return (document, KnownMessages(last, layout)) if layout is not None else None


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


def _extended(
    data: bytes, bare: bool, start: int, last: ByteLayout | None, messages: Sequence[Any]
) -> ByteLayout | None:
    """The layout once ``messages`` are found in ``data`` after ``last``'s (known to open the
    list at ``start``; None: the list's first); None unless exactly they follow and close
    the list, and the list is the document's only ``messages``."""
    count, bounds = (last.count, list(last.bounds)) if last is not None else (0, [])
    measured = position = start + (last.end - last.start if last is not None else 1)
    for index, message in enumerate(messages, count):
        gap = (_FIRST if index == 0 else _NEXT).match(data, position)
        if gap is None:
            return None
        found = _message_end(data, gap.end(), gap[1], message)
        if found is None:
            return None
        bounds += (gap.end() - start, found - start)
        position = found
    close = _CLOSE.match(data, position)
    if close is None or not (bare or _only_messages_key(data, close.end())):
        return None
    strict = (last is None or last.strict) and _strict(data, measured, position)
    return ByteLayout(data, start, position, count + len(messages), tuple(bounds), strict)


def _strict(data: bytes, first: int, last: int) -> bool:
    """Whether ``data[first:last]`` is valid UTF-8 holding no escaped surrogate (paired
    ones included: rare, and then only slower)."""
    if _SURROGATE_ESCAPE.search(data, first, last) is not None:
        return False
    try:
        str(memoryview(data)[first:last], "utf-8")
    except UnicodeDecodeError:
        return False
    return True


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
