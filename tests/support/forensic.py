"""Forensic scans for a forgotten session's bytes: plain, and inside every zstd frame.

A forgotten session must leave nothing behind, in any file: not its marker (a word planted in
its prompts), not a piece of any of its stored (compressed) records or raw copies. Freed space
keeps old bytes as they were written, so a scan also tries to decompress from every zstd frame
magic in a file (with no dictionary and with each of the vault's), whatever page it lies in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import zstandard

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_MAX_OUTPUT = 4 * 2**20  # a frame's output read at most (records and raw copies are smaller)
_PIECE = 24  # bytes of a stored blob looked for: long enough never to occur by chance


@dataclass(frozen=True)
class Evidence:
    """What is looked for: plain words (the marker and its tail, since FTS5 stores a term after
    the prefix it shares with the term before it), pieces of compressed blobs, and the dictionaries
    to decompress with."""

    words: tuple[bytes, ...]
    pieces: tuple[bytes, ...]
    dictionaries: tuple[bytes, ...]


def marker_words(marker: str) -> tuple[bytes, ...]:
    word = marker.encode()
    return (word, word.lower(), word[-10:].lower())


def pieces_of(blobs: Iterable[bytes]) -> tuple[bytes, ...]:
    """A piece from the middle of each blob that fits in a page, so it lies whole in a file
    while the blob is there."""
    return tuple(blob[len(blob) // 2 : len(blob) // 2 + _PIECE] for blob in blobs if 2 * _PIECE <= len(blob) <= 2000)


def session_blobs(db: Path, session_id: str) -> list[bytes]:
    """Every compressed blob the store holds of the session: step records (current and earlier
    versions) and the vault's copies of its files (those no other session shares: a file two
    sessions read, such as Cline's global state, stays with the other)."""
    queries = (
        "SELECT record FROM steps WHERE session_id = ?",
        "SELECT record FROM history WHERE session_id = ? AND record IS NOT NULL",
        "SELECT data FROM raw_blobs WHERE hash IN (SELECT hash FROM raw_files GROUP BY hash"
        " HAVING max(session_id) = ?1 AND min(session_id) = ?1)",
    )
    with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as connection:
        return [
            bytes(blob)
            for query in queries
            for (blob,) in connection.execute(query, (session_id,))
            if isinstance(blob, bytes)
        ]


def vault_dictionaries(db: Path) -> tuple[bytes, ...]:
    with apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY) as connection:
        stored = [bytes(data) for (data,) in connection.execute("SELECT data FROM raw_dictionaries")]
    return tuple(zstandard.ZstdDecompressor().decompress(data) for data in stored)


def evidence(db: Path, session_id: str, marker: str) -> Evidence:
    """Taken before the forget, from the store as it holds the session."""
    return Evidence(marker_words(marker), pieces_of(session_blobs(db, session_id)), vault_dictionaries(db))


def frames(data: bytes, dictionaries: Sequence[bytes]) -> Iterable[tuple[int, bytes]]:
    """What decompresses from each zstd frame magic in ``data`` (offset, output), with no
    dictionary and with each one; a frame cut short gives what it gave until then."""
    decompressors = [zstandard.ZstdDecompressor()] + [
        zstandard.ZstdDecompressor(
            dict_data=zstandard.ZstdCompressionDict(content, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        )
        for content in dictionaries
    ]
    start = data.find(_ZSTD_MAGIC)
    while start >= 0:
        for decompressor in decompressors:
            output = _decompress(decompressor, data[start : start + _MAX_OUTPUT])
            if output:
                yield start, output
        start = data.find(_ZSTD_MAGIC, start + 1)


def _decompress(decompressor: zstandard.ZstdDecompressor, data: bytes) -> bytes:
    stream = decompressor.decompressobj()
    try:
        return stream.decompress(data)
    except zstandard.ZstdError:
        return b""


def traces(path: Path, found: Evidence) -> list[str]:
    """Where in the file the session shows, plain or decompressed (empty: nowhere)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    seen = [f"{path.name}: {word!r} at {data.find(word)}" for word in found.words if word in data]
    seen += [f"{path.name}: a piece of a stored blob at {data.find(p)}" for p in found.pieces if p in data]
    for offset, output in frames(data, found.dictionaries):
        seen += [f"{path.name}: {word!r} in a zstd frame at {offset}" for word in found.words if word in output]
    return seen


def store_files(db: Path) -> list[Path]:
    return [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
