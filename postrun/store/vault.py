"""The vault: raw copies of the agent's own files, so any session can be handed back or re-read.

Each file version is stored once (``raw_blobs``: zstd, with the vault's dictionary once
there is one, see ``store/dictionary.py``; addressed by the SHA-256 of its bytes) and named
per session in ``raw_files``. Per file the newest version is kept; the version before it
is kept too, with when it was replaced, unless the new one only extends it (see
:func:`extends`). A file that disappears from the session keeps its last version, marked
replaced. Copies are written by the caller's transaction, next to the records they were
mapped into, so a copy is always of files the records were mapped from. The live re-ingests
of an open session may leave its copies behind its records for a while (``raw_copy_seconds``,
see ``Ingester.ingest``): ``copies_behind`` tells, so that the capture copies them later.

Versions of a session: every change that kept an earlier file version closes one; the
newest files are the last version. Version ``n`` is the session's files as they were just
before the ``n``-th such change (files that only grew since are given in their newest form).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from postrun.errors import SourceError
from postrun.records import PackedFile, RawCopy, RawFile, SourceFile
from postrun.store import dictionary
from postrun.store.db import Database

# Cline writes ``JSON.stringify(document, null, 2)``: the top-level message list is the one
# line that reads exactly this (nested keys are indented deeper, newlines in strings are
# escaped), and the line that closes it is the first ``\n  ]`` after it.
_MESSAGES_OPEN = b'\n  "messages": ['
_MESSAGES_CLOSE = b"\n  ]"


def blob_hash(data: bytes) -> str:
    # SHA-256: the usual content address, and faster than BLAKE2 where the CPU has SHA instructions.
    return hashlib.sha256(data).hexdigest()


def _message_items(document: bytes) -> bytes | None:
    """The text of the top-level message list's items (``b""`` when empty); None when
    ``document`` is not laid out as Cline writes it."""
    start = document.find(_MESSAGES_OPEN)
    if start < 0:
        return None
    start += len(_MESSAGES_OPEN)
    if document[start : start + 1] == b"]":
        return b""
    end = document.find(_MESSAGES_CLOSE, start)
    return None if end < 0 else document[start:end]


def extends(old: bytes, new: bytes) -> bool:
    """True when ``new`` only adds to ``old``, so keeping ``new`` alone loses nothing.

    Either ``old`` is a prefix of ``new`` (a file appended to), or both are transcripts as
    Cline writes them and every message of ``old`` is still, byte for byte, the message at
    the same place in ``new`` (messages were appended). The other top-level fields of a
    transcript (``updated_at``, the system prompt) describe the file as a whole and follow
    the newest version. Anything else (a message changed, removed or inserted, a file laid
    out differently) is not an extension, and the old version is kept: the rule can only
    err towards keeping more.
    """
    if new.startswith(old):
        return True
    old_items = _message_items(old)
    if old_items is None:
        return False
    new_items = _message_items(new)
    if new_items is None or not new_items.startswith(old_items):
        return False
    # The old items end with their last message's closing brace: the new list must go on
    # with a comma (more messages) or end there, or that last message grew.
    return not old_items or new_items[len(old_items) : len(old_items) + 1] in (b"", b",")


@dataclass(frozen=True, slots=True)
class _Current:
    id: int
    hash: str
    size: int
    mtime_ns: int
    ino: int
    settings: bool


def pack(connection: apsw.Connection, raw: RawFile) -> PackedFile:
    """``raw`` hashed and compressed as the vault keeps it, with the newest dictionary of the store
    ``connection`` reads: an ingest process's share of the vault's work."""
    compressor, used = dictionary.newest(connection)
    return PackedFile(
        raw.name, len(raw.data), blob_hash(raw.data), compressor.compress(raw.data), used, raw.fingerprint, raw.settings
    )


def keep(connection: apsw.Connection, session_id: str, files: Sequence[RawCopy], *, now: str) -> int:
    """Keep ``files`` (the session's files as just read and stored) in the vault; how many rows
    it wrote. Call it inside the transaction that stores the session's records.

    A settings file is only read at a session's first ingest: its absence later is not a removal.
    """
    execute = connection.execute
    current = {
        name: _Current(row_id, hash_, size, mtime_ns, ino, bool(settings))
        for row_id, name, hash_, size, mtime_ns, ino, settings in execute(
            "SELECT id, name, hash, size, mtime_ns, ino, settings FROM raw_files"
            " WHERE session_id = ? AND until IS NULL",
            (session_id,),
        )
    }
    hashes = {raw.name: raw.hash if isinstance(raw, PackedFile) else blob_hash(raw.data) for raw in files}
    removed = [name for name, row in current.items() if name not in hashes and not row.settings]
    changed = [raw for raw in files if raw.name not in current or current[raw.name].hash != hashes[raw.name]]
    rows = 0
    for raw in files:
        row = current.get(raw.name)
        f = raw.fingerprint
        if (
            row is not None
            and row.hash == hashes[raw.name]
            and (row.size, row.mtime_ns, row.ino) != (f.size, f.mtime_ns, f.ino)
        ):
            # Same bytes, touched: the fingerprint is what tells later whether copies and records agree.
            execute(
                "UPDATE raw_files SET size = ?, mtime_ns = ?, ino = ? WHERE id = ?", (f.size, f.mtime_ns, f.ino, row.id)
            )
            rows += 1
    if not changed and not removed:
        return rows
    generation = _next_generation(connection, session_id)
    compressor = dictionary.compressor(connection)  # which also cuts the dictionary once it is time
    for raw in changed:
        new_hash = hashes[raw.name]
        _store_blob(connection, compressor, raw, new_hash)
        row = current.get(raw.name)
        f = raw.fingerprint
        if row is not None and extends(_blob(connection, row.hash), _data(connection, raw)):
            execute(
                "UPDATE raw_files SET path = ?, hash = ?, size = ?, mtime_ns = ?, ino = ?, read_at = ? WHERE id = ?",
                (f.path, new_hash, f.size, f.mtime_ns, f.ino, now, row.id),
            )
            _drop_unused_blob(connection, row.hash)
        else:
            if row is not None:
                _replace(connection, row.id, generation, now)
            execute(
                "INSERT INTO raw_files (session_id, name, path, hash, size, mtime_ns, ino, settings, since, read_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, raw.name, f.path, new_hash, f.size, f.mtime_ns, f.ino, int(raw.settings), generation, now),
            )
        rows += 1
    for name in removed:
        _replace(connection, current[name].id, generation, now)
        rows += 1
    return rows


def keep_first(connection: apsw.Connection, session_id: str, files: Sequence[RawCopy], *, now: str) -> int:
    """``keep`` for a session stored for the first time: when the vault holds no version of it
    either (as it does not after ``forget``), every copy is new and of its first generation,
    written with a few statements (a cold ingest keeps thousands of sessions); else ``keep``."""
    if connection.execute("SELECT 1 FROM raw_files WHERE session_id = ? LIMIT 1", (session_id,)).fetchone():
        return keep(connection, session_id, files, now=now)
    compressor = dictionary.compressor(connection)  # which also cuts the dictionary once it is time
    rows = []
    for raw in files:
        hash_ = raw.hash if isinstance(raw, PackedFile) else blob_hash(raw.data)
        _store_blob(connection, compressor, raw, hash_)
        f = raw.fingerprint
        rows.append((session_id, raw.name, f.path, hash_, f.size, f.mtime_ns, f.ino, int(raw.settings), now))
    connection.executemany(
        "INSERT INTO raw_files (session_id, name, path, hash, size, mtime_ns, ino, settings, since, read_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
        rows,
    )
    return len(rows)


def last_copied(database: Database, session_id: str) -> str | None:
    """When the session's newest copies were taken (None: the vault keeps nothing of it)."""
    found = database.execute(
        "SELECT max(read_at) FROM raw_files WHERE session_id = ? AND until IS NULL AND NOT settings", (session_id,)
    ).get
    return None if found is None else str(found)


def copies_behind(database: Database, session_id: str, source_files: Iterable[SourceFile]) -> bool:
    """True when the newest copies are not of the files the records were last stored from."""
    kept = set(
        database.execute(
            "SELECT path, size, mtime_ns FROM raw_files WHERE session_id = ? AND until IS NULL AND NOT settings",
            (session_id,),
        )
    )
    return kept != {(f.path, f.size, f.mtime_ns) for f in source_files}


def _next_generation(connection: apsw.Connection, session_id: str) -> int:
    found = connection.execute(
        "SELECT max(max(since, coalesce(until, 0))) FROM raw_files WHERE session_id = ?", (session_id,)
    ).get
    return 1 if found is None else int(found) + 1


def _replace(connection: apsw.Connection, row_id: int, generation: int, now: str) -> None:
    connection.execute("UPDATE raw_files SET until = ?, replaced_at = ? WHERE id = ?", (generation, now, row_id))


def _store_blob(
    connection: apsw.Connection, compressor: tuple[dictionary.Compressor, int | None], raw: RawCopy, hash_: str
) -> None:
    """The copy's blob, unless the vault holds those bytes already (of any session)."""
    if isinstance(raw, PackedFile):  # compressed already: offered, and kept if new
        used = raw.dictionary[0] if raw.dictionary is not None else None
        connection.execute(
            "INSERT INTO raw_blobs (hash, size, data, dictionary) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
            (hash_, raw.size, raw.blob, used),
        )
        if connection.changes():  # new, and refused (its part rolled back) if nothing can read it
            _still_held(connection, raw)
        return
    if connection.execute("SELECT 1 FROM raw_blobs WHERE hash = ?", (hash_,)).fetchone() is not None:
        return
    chosen, used = compressor
    connection.execute(
        "INSERT INTO raw_blobs (hash, size, data, dictionary) VALUES (?, ?, ?, ?)",
        (hash_, len(raw.data), chosen.compress(raw.data), used),
    )


def _still_held(connection: apsw.Connection, raw: PackedFile) -> None:
    """Refuse a packed copy whose dictionary the store no longer holds (``forget`` removed it
    after the ingest process packed it): nothing could decompress it, so that session is not
    stored now, and is read again at its next ingest."""
    if not dictionary.holds(connection, raw.dictionary):
        raise SourceError(
            raw.fingerprint.path, "its raw copy was packed with a vault dictionary that `forget` removed meanwhile"
        )


def _data(connection: apsw.Connection, raw: RawCopy) -> bytes:
    """The raw bytes of a copy."""
    if isinstance(raw, RawFile):
        return raw.data
    _still_held(connection, raw)
    return dictionary.decompress(connection, raw.dictionary[0] if raw.dictionary is not None else None, raw.blob)


def _drop_unused_blob(connection: apsw.Connection, hash_: str) -> None:
    connection.execute(
        "DELETE FROM raw_blobs WHERE hash = ?1 AND NOT EXISTS (SELECT 1 FROM raw_files WHERE hash = ?1)", (hash_,)
    )


def _blob(connection: apsw.Connection, hash_: str) -> bytes:
    row = connection.execute("SELECT dictionary, data FROM raw_blobs WHERE hash = ?", (hash_,)).fetchone()
    assert row is not None, "a kept file names a blob the store does not hold"
    return dictionary.decompress(connection, None if row[0] is None else int(row[0]), bytes(row[1]))


@dataclass(frozen=True, slots=True)
class KeptFile:
    """One kept version of one file."""

    name: str
    hash: str
    size: int  # raw bytes
    fingerprint: SourceFile
    settings: bool
    read_at: str
    replaced_at: str | None


@dataclass(frozen=True, slots=True)
class KeptVersion:
    """The session's files at one kept point (see the module doc); ``replaced_at`` None: the newest."""

    number: int
    files: tuple[KeptFile, ...]
    replaced_at: str | None

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def as_json(self) -> dict[str, object]:
        return {
            "version": self.number,
            "replaced_at": self.replaced_at,
            "files": [{"name": f.name, "bytes": f.size, "read_at": f.read_at} for f in self.files],
        }


def kept_versions(database: Database, session_id: str) -> list[KeptVersion]:
    """The session's kept versions, oldest first ([] when the vault holds nothing of it)."""
    rows = [
        (
            since,
            until,
            KeptFile(name, hash_, raw, SourceFile(path, size, mtime, ino), bool(settings), read_at, replaced_at),
        )
        for since, until, name, hash_, raw, path, size, mtime, ino, settings, read_at, replaced_at in database.execute(
            "SELECT f.since, f.until, f.name, f.hash, b.size, f.path, f.size, f.mtime_ns, f.ino, f.settings,"
            " f.read_at, f.replaced_at FROM raw_files f JOIN raw_blobs b ON b.hash = f.hash"
            " WHERE f.session_id = ? ORDER BY f.name, f.id",
            (session_id,),
        )
    ]
    closed = sorted({until for _, until, _ in rows if until is not None})
    versions = []
    for number, generation in enumerate(closed, start=1):
        files = tuple(
            kept for since, until, kept in rows if since < generation and (until is None or until >= generation)
        )
        replaced_at = next(kept.replaced_at for _, until, kept in rows if until == generation)
        versions.append(KeptVersion(number, files, replaced_at))
    newest = tuple(kept for _, until, kept in rows if until is None)
    if newest:
        versions.append(KeptVersion(len(closed) + 1, newest, None))
    return versions


def read_blob(database: Database, hash_: str) -> bytes:
    """The raw bytes of one kept file version."""
    return _blob(database.connection, hash_)


def vaulted_sessions(database: Database) -> list[str]:
    """Every session the vault holds files of, in id order."""
    return [str(row[0]) for row in database.execute("SELECT DISTINCT session_id FROM raw_files ORDER BY session_id")]


def version_counts(database: Database) -> dict[str, int]:
    """How many versions the vault keeps of each session it holds."""
    return {
        str(session_id): int(count)
        for session_id, count in database.execute(
            "SELECT session_id, count(DISTINCT until) + max(until IS NULL) FROM raw_files GROUP BY session_id"
        )
    }


def forget_raw(connection: apsw.Connection, session_id: str) -> int:
    """Delete everything the vault keeps of a session (inside the caller's transaction), the
    compression dictionary too if it was cut from the session's files; rows deleted."""
    dictionary.drop_for_session(connection, session_id)
    hashes = [
        row[0] for row in connection.execute("SELECT DISTINCT hash FROM raw_files WHERE session_id = ?", (session_id,))
    ]
    connection.execute("DELETE FROM raw_files WHERE session_id = ?", (session_id,))
    deleted = connection.changes()
    for hash_ in hashes:
        _drop_unused_blob(connection, hash_)
    return deleted
