"""Reading the store without changing it: not a byte, not its time, no ``-wal`` or ``-shm`` left.

SQLite's read-only open of a WAL store creates the ``-wal`` and ``-shm`` files when they are
missing (a reader needs them to see a writer's commits) and cannot remove them on close. So:

- while another connection has the store open (its ``-wal`` is there), read through the
  files it made, with SQLite's locks;
- otherwise read the file as immutable (no locks, no side files) and check afterwards that
  nothing changed it meanwhile (same inode, size and mtime, still no ``-wal``): a writer that
  came in during the read means the answer may be torn, so it is read again, now through the
  writer's files.

Only a writer that closes in the instant between the check and the open can still leave the
two files behind (SQLite offers no other read that never creates them).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import apsw

from postrun.errors import StoreError, StoreTooNewError
from postrun.store import codec
from postrun.store.db import BUSY_TIMEOUT_MS, STORE_VERSION, Database, StoreMissing, describe_sqlite_error

T = TypeVar("T")
ATTEMPTS = 3
_Fingerprint = tuple[int, int, int, bool]  # inode, size, mtime (ns), a -wal or -journal beside it


def read_store(path: Path, work: Callable[[Database], T]) -> T:
    """``work(database)`` over a read-only view of the store at ``path``.

    Raises StoreMissing when there is no store, StoreTooNewError when a newer Postrun wrote it,
    StoreError when it is not a current Postrun store or keeps changing under the read.
    """
    for _ in range(ATTEMPTS):
        before = _fingerprint(path)
        if before is None or before[1] == 0:  # an empty file is no store yet either
            raise StoreMissing(str(path), "no store yet (run `postrun ingest` or `postrun capture`)")
        shared = before[3]
        database = _open(path, immutable=not shared)
        try:
            result = work(database)
        except apsw.Error as exc:
            raise StoreError(str(path), f"cannot read the store ({describe_sqlite_error(exc)})") from None
        finally:
            database.close()
        if shared or _fingerprint(path) == before:
            return result
    raise StoreError(str(path), "the store kept changing while it was read; try again")


def _fingerprint(path: Path) -> _Fingerprint | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(str(path), f"cannot read the store ({exc.strerror or exc})") from None
    busy = any(os.path.lexists(f"{path}{suffix}") for suffix in ("-wal", "-journal"))
    return (info.st_ino, info.st_size, info.st_mtime_ns, busy)


def _open(path: Path, *, immutable: bool) -> Database:
    uri = "file:" + urllib.parse.quote(str(path.absolute())) + ("?immutable=1" if immutable else "")
    try:
        connection = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        connection.set_busy_timeout(BUSY_TIMEOUT_MS)
        codec.register(connection)
        version = int(connection.execute("pragma user_version").get)
    except apsw.Error as exc:
        raise StoreError(str(path), f"cannot read the store ({describe_sqlite_error(exc)})") from None
    database = Database(path, connection)
    if version != STORE_VERSION:
        connection.close()
        if version > STORE_VERSION:
            raise StoreTooNewError(
                str(path),
                f"written by a newer Postrun (store version {version}, this Postrun knows up to "
                f"{STORE_VERSION}); upgrade Postrun",
            )
        if version == 0:
            raise StoreError(str(path), "not a Postrun store")
        raise StoreError(
            str(path),
            f"an older store (version {version}): run `postrun capture` or `postrun ingest` once to upgrade it",
        )
    return database
