"""Scrubbing what removed sessions leave in the store's files, after a forget.

Deleted rows leave their bytes behind: in freed pages, in the unused space of pages still in
use (``secure_delete`` zeroes a freed cell or page, but a page that a b-tree balance rebuilt
keeps its old bytes in the gap between its cells, so a session rewritten and re-ingested leaves
copies no pragma reaches), in FTS5's segments until they are merged, and in the write-ahead log
until it is checkpointed. So the scrub merges the search index (FTS5 ``optimize``), rebuilds the
file (``VACUUM``: every page written anew from the rows that remain) and checkpoints the WAL
into it, truncating it. It costs a rewrite of the store per forget, and nothing on ingest.

A reader's transaction (another process holding an older snapshot) keeps the checkpoint from
copying the rewrite over the old pages: the scrub waits for readers (bounded), and when one
stays, the store remembers that the scrub is not finished (``store_meta`` ``scrub_pending``)
and what is left; a running capture finishes it when it can (``finish_pending``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apsw

from postrun.errors import ScrubPending
from postrun.store.db import BUSY_TIMEOUT_MS, Database, describe_sqlite_error

PENDING_KEY = "scrub_pending"
WAIT_SECONDS = 10.0  # how long a forget waits for readers to finish before it says what is left
_REWRITE = "rewrite"  # the file still holds the removed rows' freed bytes
_CHECKPOINT = "checkpoint"  # the rewrite is in the WAL; the file's old pages are not overwritten yet
_MERGE_INDEX = "INSERT INTO step_search (step_search) VALUES ('optimize')"  # FTS5: one segment, none stale


@dataclass(frozen=True, slots=True)
class ScrubLeft:
    """What a scrub could not finish, and why."""

    part: str  # _REWRITE or _CHECKPOINT
    why: str

    def error(self, db: Path) -> ScrubPending:
        """What the command that removed the rows says (and exits 75 with)."""
        return ScrubPending(
            str(db),
            f"the scrub is not finished: {self.describe()}; a running capture finishes it when it can,"
            " as does `postrun capture --once`",
        )

    def describe(self) -> str:
        if self.part == _REWRITE:
            return f"the store file and its write-ahead log still hold the removed bytes ({self.why})"
        # The rewritten store is in the log, beside the frames that still hold the removed rows.
        return (
            "the store file and its write-ahead log still hold the removed bytes until the log, which holds"
            f" the rewritten store, is copied into the file and emptied ({self.why})"
        )


def mark_pending(connection: apsw.Connection) -> None:
    """Inside the transaction that removes the rows: the scrub is due, whatever happens next."""
    _set_pending(connection, _REWRITE)


def pending(database: Database) -> bool:
    row = database.execute("SELECT value FROM store_meta WHERE key = ?", (PENDING_KEY,)).fetchone()
    return row is not None


def scrub(
    database: Database,
    *,
    wait_seconds: float = WAIT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ScrubLeft | None:
    """Rewrite the store and checkpoint it, waiting at most ``wait_seconds`` for readers (and
    writers) to let it; None when done, else what is left (and stays marked as pending)."""
    connection = database.connection
    deadline = clock() + wait_seconds
    row = database.execute("SELECT value FROM store_meta WHERE key = ?", (PENDING_KEY,)).fetchone()
    if row is None or row[0] == _REWRITE:
        left = _rewrite(database)
        if left is not None:
            return left
    while True:
        remaining = deadline - clock()
        busy = _checkpoint(connection, timeout_ms=int(max(0.0, min(remaining, BUSY_TIMEOUT_MS / 1000)) * 1000))
        if busy is None:
            break
        if clock() >= deadline:
            return ScrubLeft(_CHECKPOINT, busy)
        sleep(min(0.05, max(0.0, deadline - clock())))
    with database.transaction():
        connection.execute("DELETE FROM store_meta WHERE key = ?", (PENDING_KEY,))
    _checkpoint(connection, timeout_ms=0)  # the WAL then holds that one change at most
    return None


def attempt(database: Database, *, wait_seconds: float = WAIT_SECONDS) -> ScrubLeft | None:
    """``scrub`` after rows were removed, a SQLite error of its own (another writer keeping the
    store past the busy timeout) being what is left rather than the command's failure: the rows
    are gone and the store says the scrub is due (``mark_pending``, committed with them)."""
    try:
        return scrub(database, wait_seconds=wait_seconds)
    except apsw.Error as exc:
        return ScrubLeft(_REWRITE, describe_sqlite_error(exc))


def finish_pending(database: Database) -> tuple[bool, ScrubLeft | None]:
    """For a running capture, between its writes: finish a scrub a forget left, without waiting
    for readers. (whether one was pending, what is still left)."""
    if not pending(database):
        return False, None
    return True, attempt(database, wait_seconds=0)


def scrub_copy(connection: apsw.Connection) -> bool:
    """A copy of the store taken while a scrub was pending (a backup's file), scrubbed in place
    as ``scrub`` does it: the search index merged and the file rebuilt, the mark removed; True
    when one was pending. The copy's pages are the store's, so without it a backup kept the
    forgotten bytes for as long as it is kept (README: Forgetting). Only for a file no other
    process has open, in rollback mode; its journal is kept in memory meanwhile, so the old pages
    are written to no other file on the way (a copy cut short is never renamed into place)."""
    if connection.execute("SELECT 1 FROM store_meta WHERE key = ?", (PENDING_KEY,)).fetchone() is None:
        return False
    mode = str(connection.execute("pragma journal_mode").get)
    connection.execute("pragma journal_mode = memory")
    with connection:
        connection.execute("DELETE FROM store_meta WHERE key = ?", (PENDING_KEY,))
        connection.execute(_MERGE_INDEX)
    connection.execute("VACUUM")
    connection.execute(f"pragma journal_mode = {mode}")
    return True


def _rewrite(database: Database) -> ScrubLeft | None:
    connection = database.connection
    try:
        with database.transaction():
            connection.execute(_MERGE_INDEX)
        connection.execute("VACUUM")
    except apsw.BusyError:
        return _still(database, ScrubLeft(_REWRITE, "another process is writing to the store"))
    except (apsw.FullError, apsw.IOError) as exc:
        return _still(database, ScrubLeft(_REWRITE, f"cannot rewrite the store: {describe_sqlite_error(exc)}"))
    with database.transaction():
        _set_pending(connection, _CHECKPOINT)
    return None


def _still(database: Database, left: ScrubLeft) -> ScrubLeft:
    with database.transaction():
        _set_pending(database.connection, left.part)
    return left


def _checkpoint(connection: apsw.Connection, *, timeout_ms: int) -> str | None:
    """Checkpoint the whole WAL into the file and truncate it; None when done, else why not."""
    connection.set_busy_timeout(timeout_ms)
    try:
        # (busy, frames in the WAL, frames checkpointed): done when not busy and the WAL is empty.
        row = connection.execute("pragma wal_checkpoint(TRUNCATE)").fetchone()
    except apsw.BusyError:
        row = None
    finally:
        connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    if row is not None and row[0] == 0 and row[1] <= 0:
        return None
    return "another process holds a read transaction open on an older snapshot of the store"


def _set_pending(connection: apsw.Connection, part: str) -> None:
    connection.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT DO UPDATE SET value = excluded.value",
        (PENDING_KEY, part),
    )
