"""How a step record is kept: its canonical JSON, zstd-compressed, and the text search indexes.

The search index holds no copy of the text (it is an external-content FTS5 table over
the ``step_search_text`` view): SQLite asks ``postrun_search_text(record)`` for a step's
text when it shows a snippet or rebuilds the index, so every connection that reads the
store registers these functions (``register``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import apsw
import orjson
import zstandard

# Search indexes this much of each large field; the record itself is stored whole.
SEARCH_FIELD_CHARS = 4096
_LEVEL = 3  # zstd's default: about 3x on step records at about 10 µs each
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _Codecs(threading.local):
    """zstd contexts are not safe to share between threads: one pair per thread."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_codecs = _Codecs()


def pack(blob: bytes) -> bytes:
    """A record's canonical JSON as stored."""
    return _codecs.compressor.compress(blob)


def unpack(stored: bytes | str) -> bytes:
    """The canonical JSON of a stored record (a record from before compression is text)."""
    if isinstance(stored, str):
        return stored.encode()
    if stored[:4] != _ZSTD_MAGIC:
        return stored
    return _codecs.decompressor.decompress(stored)


def load(stored: bytes | str) -> Any:
    return orjson.loads(unpack(stored))


def search_fields(record: Mapping[str, Any], limit: int | None = None) -> list[str]:
    """The texts a step is found by: tool name, command, path, text, output, its raw input, its
    error; each cut to ``limit`` characters (None: whole)."""
    payload = record["payload"]
    parts: list[str] = []
    for key in ("tool_name", "command", "path", "text", "stdout", "stderr", "old_string", "new_string"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            parts.append(value[:limit])
    if "raw" in payload:
        # Sorted keys: the text is the same from a record as mapped and as stored.
        parts.append(orjson.dumps(payload["raw"], option=orjson.OPT_SORT_KEYS).decode()[:limit])
    error = record.get("error")
    if error:
        parts.append(str(error.get("message", ""))[:limit])
    return parts


def search_body(record: Mapping[str, Any]) -> str:
    """The text a step is found by, as the index holds it: ``search_fields``, each bounded."""
    return "\n".join(search_fields(record, SEARCH_FIELD_CHARS))


def _pack_text(*values: apsw.SQLiteValue) -> bytes:
    (text,) = values
    return pack(unpack(_blob(text)))


def indexed_text(blob: bytes) -> str:
    """The search text of a step from its canonical JSON, exactly as the index's view gives it
    (FTS5 unindexes a changed step by the text the view gives: the two must never differ)."""
    return search_body(orjson.loads(blob))


def _blob(value: apsw.SQLiteValue) -> bytes | str:
    if not isinstance(value, bytes | str):
        raise TypeError(f"a record is text or a blob, not {type(value).__name__}")
    return value


def _record_text(*values: apsw.SQLiteValue) -> str | None:
    (stored,) = values
    return None if stored is None else unpack(_blob(stored)).decode()


def _search_text(*values: apsw.SQLiteValue) -> str | None:
    (stored,) = values
    return None if stored is None else indexed_text(unpack(_blob(stored)))


def register(connection: apsw.Connection) -> None:
    """``postrun_pack(text)``, ``postrun_record(record)`` (the JSON text) and ``postrun_search_text(record)``."""
    # Pure functions, so the schema's view may call them whatever ``trusted_schema`` says.
    innocuous = apsw.SQLITE_INNOCUOUS
    connection.create_scalar_function("postrun_pack", _pack_text, 1, deterministic=True, flags=innocuous)
    connection.create_scalar_function("postrun_record", _record_text, 1, deterministic=True, flags=innocuous)
    connection.create_scalar_function("postrun_search_text", _search_text, 1, deterministic=True, flags=innocuous)
