"""Small pure readers of Codex's values: texts, times, commands, paths.

Every reader takes whatever a rollout holds at a place and gives a value of one type or
None: a wrong type is treated as absent, never as an error.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from typing import Any
from urllib.parse import unquote

import orjson

from postrun.schema import plain
from postrun.timestamps import epoch_ms, iso_from_ms

_CODEX_TIME = re.compile(r"\d{4}-\d\d-\d\dT(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z", re.ASCII)
# Shells Codex wraps a command string in: ``["/bin/bash", "-lc", X]``.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_SHELL_FLAGS = frozenset({"-lc", "-c", "-l -c", "-ic"})


def text(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def timestamp(value: Any) -> str | None:
    """``value`` when it is a v1.2 timestamp (ISO 8601 with a zone), else None."""
    if not isinstance(value, str):
        return None
    if _CODEX_TIME.fullmatch(value):
        return value if _real_day(value[:10]) else None  # Codex's own form, on every line
    return value if plain.is_timestamp(value) else None


@functools.lru_cache(maxsize=256)
def _real_day(day: str) -> bool:
    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return True


def time_from_ms(value: Any) -> str | None:
    """Epoch milliseconds (``started_at_ms``) as a v1.2 timestamp, else None."""
    ms = epoch_ms(value)
    return iso_from_ms(ms) if ms is not None else None


def decoded(value: Any) -> Any:
    """A function call's ``arguments``: the JSON object it holds, else the value as is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def command_text(value: Any) -> str | None:
    """The shell string of a command: ``["/bin/bash", "-lc", X]`` is X, another list is its
    words joined by spaces, a string is itself."""
    if isinstance(value, str):
        return value or None
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value) or not value:
        return None
    if len(value) == 3 and value[0].rsplit("/", 1)[-1] in _SHELLS and value[1] in _SHELL_FLAGS:
        return str(value[2])
    return " ".join(value)


def local_path(value: Any) -> str | None:
    """A cwd as a plain path: ``file:///home/me`` is ``/home/me``."""
    path = text(value)
    if path is not None and path.startswith("file://"):
        path = unquote(path[len("file://") :]) or None
    return path


def joined_texts(parts: Any, separator: str) -> str | None:
    """The ``text`` of every part of a content list that has one, joined; None when none has."""
    if not isinstance(parts, list):
        return None
    texts = [part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return separator.join(texts) if texts else None


def plain_texts(parts: Any, separator: str) -> str | None:
    """A list of strings (``summary_text``), or of text parts, joined; None when empty."""
    if not isinstance(parts, list):
        return None
    texts = [part if isinstance(part, str) else mapping(part).get("text") for part in parts]
    kept = [piece for piece in texts if isinstance(piece, str)]
    return separator.join(kept) if kept else None
