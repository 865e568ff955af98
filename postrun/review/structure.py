"""Secrets a value's structure splits: found in one text made of its strings, masked in each.

A patch's lines (a private key spans several) are read as the lines joined; a key and its value
as their JSON text (``{"password": "…"}``: neither string is a secret alone). Each string then
gets back its own part of what was found, masked, in its place. Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from postrun.review.secrets import Secret


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


def pair_text(key: str, value: str) -> tuple[str, int, int]:
    """``{key: value}`` as compact JSON text, and where the value's content (escaped) sits in it."""
    encoded = orjson.dumps({key: value}).decode()
    end = len(encoded) - 2  # before the closing quote and brace
    return encoded, end - (len(orjson.dumps(value).decode()) - 2), end


def pair_value(text: str, start: int, end: int, found: Sequence[Secret]) -> str:
    """The value of ``pair_text`` with what ``found`` covers of it masked (``masked_pieces``)."""
    (encoded,) = masked_pieces(text, [(start, end)], found)
    try:
        return str(orjson.loads(f'"{encoded}"'))
    except orjson.JSONDecodeError:  # a secret's edge fell inside an escape: all of it goes
        return placeholder(found[0].kind)
