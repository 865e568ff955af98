"""The store's WAL checkpointed beside a writer that commits much, in a thread of its own.

SQLite checkpoints the WAL in the committing connection once it holds 1,000 pages: copying
the pages into the database file and syncing it. In a batched ingest that was most of each
commit (35 commits of one-turn sessions: 3.8 s, of which 1.0 s of the writer's CPU; the rest
waiting for the disk), in which the writer stored nothing. A checkpoint may run on another
connection while the writer writes (it copies what was committed before it began), and
SQLite releases the GIL meanwhile, so the writer goes on storing. What the thread has not
copied when the writer is done, the writer's own checkpoint takes (at its next commit, or
when it closes the store).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import apsw

from postrun.errors import StoreError
from postrun.store.db import Database, connect_writer

# SQLite's own default: the writer checkpoints alone again between large transactions.
_AUTOCHECKPOINT_PAGES = 1000


class Checkpoints:
    """A thread checkpointing the store's WAL after each commit of the writer's large transactions.

    Only those: between them (capture's live work between two batches of its catch-up) the
    writer checkpoints as it always does."""

    def __init__(self, writer: apsw.Connection, connection: apsw.Connection) -> None:
        self._writer = writer
        self._connection = connection
        self._due = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="postrun-checkpoints", daemon=True)
        self._thread.start()

    def begun(self) -> None:
        """The writer began a large transaction: its commit leaves the checkpoint to the thread."""
        self._writer.wal_autocheckpoint(0)

    def ended(self) -> None:
        """It ended (committed, or rolled back): the thread checkpoints what it added, now or once
        the checkpoint under way is done."""
        self._writer.wal_autocheckpoint(_AUTOCHECKPOINT_PAGES)
        self._due.set()

    def _run(self) -> None:
        try:
            while True:
                self._due.wait()
                self._due.clear()
                if self._stopping:
                    return
                # PASSIVE: never waits for a reader or the writer; what it cannot copy now, the
                # next one (or the writer's own) copies.
                with contextlib.suppress(apsw.Error):
                    self._connection.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        finally:
            self._connection.close()

    def stop(self) -> None:
        self._stopping = True
        self._due.set()
        self._thread.join()


@contextlib.contextmanager
def checkpointed_beside(database: Database) -> Iterator[Checkpoints | None]:
    """A thread to checkpoint the store's WAL for the block's large transactions (None: no
    connection to checkpoint with could be had, and the writer checkpoints as usual)."""
    try:
        connection = connect_writer(database.path)
    except (StoreError, apsw.Error):  # only a help: the writer checkpoints as it always did
        yield None
        return
    try:
        # A connection that has not read the file yet does not know it is in WAL mode: its
        # checkpoints would do nothing (SQLite answers -1, -1).
        wal = str(connection.execute("pragma journal_mode").get).lower() == "wal"
    except apsw.Error:
        wal = False
    if not wal:
        connection.close()
        yield None
        return
    checkpoints = Checkpoints(database.connection, connection)
    try:
        yield checkpoints
    finally:
        checkpoints.stop()
        with contextlib.suppress(apsw.Error):  # the store may be closed by now (an abandoned generator)
            database.connection.wal_autocheckpoint(_AUTOCHECKPOINT_PAGES)
