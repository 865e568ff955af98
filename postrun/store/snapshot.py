"""Reading the store without changing it: not a byte, not its time, no ``-wal`` or ``-shm`` left.

SQLite's read-only open of a WAL store creates the ``-wal`` and ``-shm`` files when they are
missing (a reader needs them to see a writer's commits) and cannot remove them on close. So:

- while another connection has the store open (its ``-wal`` is there), read through the
  files it made, with SQLite's locks;
- otherwise read the file as immutable (no locks, no side files) and check afterwards that
  nothing changed it meanwhile (same inode, size and mtime, still no ``-wal``): a writer that
  came in during the read means the answer may be torn, so it is read again, now through the
  writer's files. A read the writer tore so far that SQLite finds the file corrupt (a
  ``forget`` rebuilds it) is read again too.

Only a writer that closes in the instant between the check and the open can still leave the
two files behind (SQLite offers no other read that never creates them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import apsw

from postrun.errors import StoreError
from postrun.store.db import Database, describe_sqlite_error

T = TypeVar("T")
ATTEMPTS = 3
_Fingerprint = tuple[int, int, int, bool]  # inode, size, mtime (ns), a -wal or -journal beside it


def read_store(path: Path, work: Callable[[Database], T]) -> T:
    """``work(database)`` over a read-only view of the store at ``path``.

    Raises what ``Database.open_reader`` raises (StoreMissing when there is no store yet,
    StoreTooOldError, StoreTooNewError, StoreError), and StoreError when the store keeps
    changing under the read.
    """
    for _ in range(ATTEMPTS):
        before = _fingerprint(path)
        shared = before is not None and before[3]
        database = Database.open_reader(path, immutable=not shared)  # no store: StoreMissing
        try:
            result = work(database)
        except apsw.Error as exc:
            if not shared and _fingerprint(path) != before:
                continue  # a writer rewrote the file under the immutable read (a VACUUM): torn, not corrupt
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
