"""Secrets a value's structure splits: found in one text made of its strings, masked in each.

A patch's lines (a private key spans several) are read as the lines joined; a key and its value
as their JSON text (``{"password": "…"}``: neither string is a secret alone). Each string then
gets back its own part of what was found, masked, in its place. Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from postrun.review.secrets import Secret

# Where a string sits in a tree: the keys and indexes leading to it, and whether it is the key
# of the last step (a dict's key) or the value there.
Path = tuple[str | int, ...]
Place = tuple[Path, bool]


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def masked_pieces(text: str, pieces: Sequence[tuple[int, int]], found: Sequence[Secret]) -> list[str]:
    """Each ``(start, end)`` piece of ``text`` with what ``found`` (in order, not overlapping)
    covers of it masked: a secret's placeholder in the piece where it starts, the rest of it
    left out of the pieces it runs on into."""
    out: list[str] = []
    for start, end in pieces:
        parts, done = [], start
        for secret in found:
            if secret.end <= start or secret.start >= end:
                continue
            parts.append(text[done : max(secret.start, start)])
            if secret.start >= start:
                parts.append(placeholder(secret.kind))
            done = min(secret.end, end)
        parts.append(text[done:end])
        out.append("".join(parts))
    return out


@dataclass(frozen=True, slots=True)
class JsonView:
    """A tree as compact JSON text, and where each of its strings' content sits in it."""

    text: str
    places: tuple[tuple[int, int, Place], ...]  # (start, end, place), in text order

    def masked(self, found: Sequence[Secret]) -> dict[Place, str]:
        """The strings ``found`` touches, each with its part masked (``masked_pieces``)."""
        touched = [
            (start, end, place)
            for start, end, place in self.places
            if any(secret.start < end and secret.end > start for secret in found)
        ]
        shown = masked_pieces(self.text, [(start, end) for start, end, _ in touched], found)
        changes: dict[Place, str] = {}
        for (start, end, place), encoded in zip(touched, shown, strict=True):
            try:
                changes[place] = orjson.loads(f'"{encoded}"')
            except orjson.JSONDecodeError:  # a secret's edge fell inside an escape: all of it goes
                changes[place] = placeholder(next(s.kind for s in found if s.start < end and s.end > start))
        return changes


def json_view(tree: Any) -> JsonView | None:
    """``tree`` (a JSON-like value) as a ``JsonView``; None when it holds a key that is no string."""
    parts: list[str] = []
    places: list[tuple[int, int, Place]] = []
    length = 0

    def put(piece: str) -> None:
        nonlocal length
        parts.append(piece)
        length += len(piece)

    def string(value: str, place: Place) -> None:
        encoded = orjson.dumps(value).decode()
        places.append((length + 1, length + len(encoded) - 1, place))
        put(encoded)

    def add(value: Any, path: Path) -> bool:
        if isinstance(value, str):
            string(value, (path, False))
        elif isinstance(value, dict):
            put("{")
            for index, (key, item) in enumerate(value.items()):
                if not isinstance(key, str):
                    return False
                put("," if index else "")
                string(key, ((*path, key), True))
                put(":")
                if not add(item, (*path, key)):
                    return False
            put("}")
        elif isinstance(value, list):
            put("[")
            for index, item in enumerate(value):
                put("," if index else "")
                if not add(item, (*path, index)):
                    return False
            put("]")
        else:
            put(orjson.dumps(value).decode())
        return True

    return JsonView("".join(parts), tuple(places)) if add(tree, ()) else None
