"""The vault's compression dictionary: earlier raw content that new copies may refer to.

A file compressed alone can only use its own repetitions; Cline's sessions repeat each other
(the system prompt, the same files read and the same commands run, the same JSON shapes),
so once the vault holds ``BUILD_AFTER_BYTES`` of copies, the newest ``CONTENT_BYTES`` of them
become a raw-content zstd dictionary, and copies stored from then on are compressed with it
(zstd's own trained dictionaries, tried on the bench history, paid far less).

The dictionary holds bytes of the sessions it was cut from, which ``forget`` must remove:
:func:`drop_for_session` recompresses every copy that uses a dictionary cut from a forgotten
session without it, and deletes the dictionary (a new one is cut from what remains later).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import apsw
import orjson
import zstandard

BUILD_AFTER_BYTES = 8 * 2**20  # raw bytes kept before a dictionary pays for its own size
# The copies kept before the dictionary was cut (and those ingest processes packed before they
# could read it) are compressed with it once it is cut, up to this many raw bytes: a one-off
# cost (about 40 ms for 8 MB) for about a third off their size; bounded, as a store whose
# dictionary ``forget`` removed may hold far more copies compressed without one.
RECOMPRESS_BYTES = 2 * BUILD_AFTER_BYTES
CONTENT_BYTES = 2**20  # within zstd's window at the vault's level: all of it is reachable
# Level 3 (zstd's default): several times faster than the higher levels, which buy a few
# percent on Cline's JSON for several times the CPU on every live rewrite.
LEVEL = 3


# Prepared dictionaries by content hash: preparing one costs milliseconds, and every copy
# stored or read needs it.
_PREPARED: dict[str, zstandard.ZstdCompressionDict] = {}
_KEPT = 4  # prepared dictionaries kept: a store holds one in use
# A fresh compression context costs a copy about 45 µs (allocating it, loading the dictionary):
# as much as compressing a one-turn session's file, a few percent of a large one's. Copies up to
# this size reuse their thread's context; a larger one gets its own, freed after: a context
# keeps the tables of the largest copy it compressed (2 MB and more a process for 1 MB files).
_REUSED_UP_TO = 256 * 2**10


class _Contexts(threading.local):
    """Each thread's compression context (a context is not safe to share between threads): the
    one of the dictionary it last compressed with."""

    def __init__(self) -> None:
        self.compressor: tuple[str | None, zstandard.ZstdCompressor] | None = None


_contexts = _Contexts()


@dataclass(frozen=True, slots=True)
class Compressor:
    """Compresses copies at the vault's level with one dictionary (None: none)."""

    prepared: zstandard.ZstdCompressionDict | None
    hash: str | None

    def compress(self, data: bytes) -> bytes:
        if len(data) > _REUSED_UP_TO:
            return self._fresh().compress(data)
        kept = _contexts.compressor
        if kept is None or kept[0] != self.hash:
            kept = _contexts.compressor = (self.hash, self._fresh())
        return kept[1].compress(data)

    def _fresh(self) -> zstandard.ZstdCompressor:
        if self.prepared is None:
            return zstandard.ZstdCompressor(level=LEVEL)
        return zstandard.ZstdCompressor(dict_data=self.prepared)


_PLAIN = Compressor(None, None)


def _by_id(
    connection: apsw.Connection, dictionary_id: int, hash_: str | None = None
) -> tuple[zstandard.ZstdCompressionDict, str]:
    """The prepared dictionary ``dictionary_id``, and its content hash."""
    if hash_ is None:
        hash_ = str(connection.execute("SELECT hash FROM raw_dictionaries WHERE id = ?", (dictionary_id,)).get)
    prepared = _PREPARED.get(hash_)
    if prepared is None:
        data = connection.execute("SELECT data FROM raw_dictionaries WHERE id = ?", (dictionary_id,)).get
        content = zstandard.ZstdDecompressor().decompress(data)
        prepared = zstandard.ZstdCompressionDict(content, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        prepared.precompute_compress(level=LEVEL)
        if len(_PREPARED) >= _KEPT:
            _PREPARED.clear()
        _PREPARED[hash_] = prepared
    return prepared, hash_


def compressor(connection: apsw.Connection) -> tuple[Compressor, int | None]:
    """A compressor for new copies, and the id of the dictionary it uses (None: none yet).

    Cuts the dictionary, inside the caller's transaction, when the vault has grown enough.
    """
    found, used = newest(connection)
    if used is None and (row := _build(connection)) is not None:
        used = int(row[0]), str(row[1])
        found = Compressor(*_by_id(connection, *used))
        _recompress_with(connection, found, used[0])
    return found, None if used is None else used[0]


def newest(connection: apsw.Connection) -> tuple[Compressor, tuple[int, str] | None]:
    """A compressor for new copies with the newest dictionary, and its id and content hash (None:
    none yet); read only, for an ingest process that compresses copies beside the writer."""
    row = connection.execute("SELECT id, hash FROM raw_dictionaries ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return _PLAIN, None
    dictionary_id, hash_ = int(row[0]), str(row[1])
    return Compressor(*_by_id(connection, dictionary_id, hash_)), (dictionary_id, hash_)


def newest_id(connection: apsw.Connection) -> int | None:
    """The id of the newest dictionary (None: none yet)."""
    found = connection.execute("SELECT max(id) FROM raw_dictionaries").get
    return None if found is None else int(found)


def holds(connection: apsw.Connection, dictionary: tuple[int, str] | None) -> bool:
    """Whether the store holds that dictionary (None: no dictionary is needed): ``forget`` may
    have removed it after an ingest process compressed a copy with it."""
    if dictionary is None:
        return True
    found = connection.execute("SELECT 1 FROM raw_dictionaries WHERE id = ? AND hash = ?", dictionary).fetchone()
    return found is not None


def _build(connection: apsw.Connection) -> tuple[int, str] | None:
    kept = connection.execute("SELECT coalesce(sum(size), 0) FROM raw_blobs").get
    if int(kept) < BUILD_AFTER_BYTES:
        return None
    parts: list[bytes] = []
    hashes: list[str] = []
    size = 0
    # Newest first: the copies most like those still to come.
    for hash_, dictionary_id, data in connection.execute(
        "SELECT hash, dictionary, data FROM raw_blobs ORDER BY rowid DESC"
    ):
        parts.append(decompress(connection, dictionary_id, data))
        hashes.append(hash_)
        size += len(parts[-1])
        if size >= CONTENT_BYTES:
            break
    content = b"".join(reversed(parts))[-CONTENT_BYTES:]  # the newest bytes sit at the end, nearest
    sessions = sorted(
        {
            str(session_id)
            for hash_ in hashes
            for (session_id,) in connection.execute(
                "SELECT DISTINCT session_id FROM raw_files WHERE hash = ?", (hash_,)
            )
        }
    )
    return connection.execute(
        "INSERT INTO raw_dictionaries (hash, data, sessions) VALUES (?, ?, ?) RETURNING id, hash",
        (
            hashlib.sha256(content).hexdigest(),
            zstandard.ZstdCompressor(level=LEVEL).compress(content),
            orjson.dumps(sessions).decode(),
        ),
    ).fetchone()


def _recompress_with(connection: apsw.Connection, compressor: Compressor, dictionary_id: int) -> None:
    """The newest copies compressed without a dictionary, up to ``RECOMPRESS_BYTES`` raw, compressed
    with ``dictionary_id`` instead where that is smaller."""
    # The hashes first (only those within the budget: after a forget, every copy the vault
    # keeps may be one), then one blob at a time: the copies may be far larger than memory.
    within = [
        str(row[0])
        for row in connection.execute(
            "SELECT hash FROM (SELECT hash, sum(size) OVER (ORDER BY rowid DESC) AS newer FROM raw_blobs"
            " WHERE dictionary IS NULL) WHERE newer <= ?",
            (RECOMPRESS_BYTES,),
        )
    ]
    for hash_ in within:
        data = bytes(connection.execute("SELECT data FROM raw_blobs WHERE hash = ?", (hash_,)).get)
        smaller = compressor.compress(decompress(connection, None, data))
        if len(smaller) < len(data):
            connection.execute(
                "UPDATE raw_blobs SET data = ?, dictionary = ? WHERE hash = ?", (smaller, dictionary_id, hash_)
            )


def decompress(connection: apsw.Connection, dictionary_id: int | None, data: bytes) -> bytes:
    if dictionary_id is None:
        return zstandard.ZstdDecompressor().decompress(data)
    return zstandard.ZstdDecompressor(dict_data=_by_id(connection, dictionary_id)[0]).decompress(data)


def drop_for_session(connection: apsw.Connection, session_id: str) -> int:
    """Remove every dictionary cut from ``session_id``'s files, recompressing the copies that use
    it without one (inside the caller's transaction); how many copies were recompressed."""
    recompressed = 0
    plain = _PLAIN
    for dictionary_id, sessions in list(connection.execute("SELECT id, sessions FROM raw_dictionaries")):
        if session_id not in orjson.loads(sessions):
            continue
        # The hashes first, then one blob at a time: the copies may be far larger than memory.
        using = [
            row[0] for row in connection.execute("SELECT hash FROM raw_blobs WHERE dictionary = ?", (dictionary_id,))
        ]
        for hash_ in using:
            data = connection.execute("SELECT data FROM raw_blobs WHERE hash = ?", (hash_,)).get
            raw = decompress(connection, dictionary_id, data)
            connection.execute(
                "UPDATE raw_blobs SET data = ?, dictionary = NULL WHERE hash = ?", (plain.compress(raw), hash_)
            )
            recompressed += 1
        connection.execute("DELETE FROM raw_dictionaries WHERE id = ?", (dictionary_id,))
    return recompressed
