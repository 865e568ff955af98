"""Secrets a value's structure splits: found in one text made of its strings, masked in each.

A patch's lines (a private key spans several) are read as the lines joined; a key and its value
as their JSON text (``{"password": "…"}``: neither string is a secret alone). Each string then
gets back its own part of what was found, masked, in its place. Pure: values in, values out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from postrun.review.secrets import Secret, find_secrets, may_hold_secrets

KEY_CHARS = 200  # a longer key is text, not a name a value sits beside


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


def tree_secrets(value: Any, where: str = "") -> Iterator[tuple[str, list[Secret]]]:
    """(where, secrets) for each text the redactor looks at in ``value`` (a JSON-like tree) that
    holds any: each string, each key (a token used as a key; found beside the key's path), a list
    of strings as its lines joined, a string beside its key as the pair (what the string alone
    does not hold). The flags look where the redactor masks: README, the flags and the redactor
    are one set of rules."""
    if isinstance(value, str):
        found = find_secrets(value)
        if found:
            yield where, found
    elif isinstance(value, dict):
        for key, item in value.items():
            key = str(key)
            holds, beside = key_look(key) if len(key) < KEY_CHARS else (True, False)
            if holds and (in_key := find_secrets(key)):
                yield where, in_key
            here = f"{where}.{key}" if where else key
            if not isinstance(item, str):
                yield from tree_secrets(item, here)
                continue
            own = find_secrets(item)
            if own:
                yield here, own
            if beside and (paired := pair_secrets(key, item, own)):
                yield here, paired
    elif isinstance(value, list):
        if len(value) > 1 and all(isinstance(item, str) for item in value):
            found = find_secrets("\n".join(value))
            if found:
                yield where, found
        else:
            for index, item in enumerate(value):
                yield from tree_secrets(item, f"{where}[{index}]")


@functools.lru_cache(maxsize=4096)
def key_look(key: str) -> tuple[bool, bool]:
    """Whether ``key`` holds a secret itself, and whether a value beside it may be one: records
    repeat their keys, each looked at once."""
    return bool(find_secrets(key)), may_hold_secrets(key)


def pair_secrets(key: str, value: str, own: list[Secret]) -> list[Secret]:
    """The secrets that show only with ``value`` beside its ``key`` (``{"password": "…"}``),
    in the pair's JSON text: the value's own secrets (``own``) masked first, and only what lies
    inside the value."""
    if own:
        (value,) = masked_pieces(value, [(0, len(value))], own)
    return pair_found(key, value)[3]


def pair_found(key: str, value: str) -> tuple[str, int, int, list[Secret]]:
    """``pair_text`` and the secrets found in it inside the value (a rule's match may run on past
    it into the JSON's syntax), but a placeholder the value already holds."""
    text, start, end = pair_text(key, value)
    found = [
        secret
        for secret in find_secrets(text)
        if start <= secret.start and secret.end <= end and not secret.value.startswith("[REDACTED:")
    ]
    return text, start, end, found
