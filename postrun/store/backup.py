"""Backups of the whole store: a consistent copy while capture writes, verified; and restore.

A backup is made with SQLite's online backup API in one step: one read transaction, so the
copy is the store as of one instant even while a capture commits (WAL readers do not block
the writer). It is written to a temporary file next to the target (0600), switched to a
rollback journal so it is one self-contained file, verified, and only then renamed into
place: a backup file that exists is complete and was checked. A copy taken while a forget's
scrub is unfinished (a reader or writer held it up) is scrubbed before that: the copy holds
the store's pages, removed rows' bytes included, and a backup is kept for long.

Restore copies a verified backup into the store through the same API, as one write
transaction of the store itself: killed half way, the store keeps what it held. Tombstones
outlive it: those of the store it replaces are carried over, and a session the backup brings
back that was forgotten since is forgotten again (``forget.carry_over``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import apsw

from postrun.errors import AlreadyRunning, PostrunError, StoreError, StoreTooNewError
from postrun.paths import ensure_private_dir
from postrun.store import codec, outbox, scrub
from postrun.store.db import NOT_UTF8, STORE_VERSION, Database, describe_sqlite_error
from postrun.store.forget import Tombstone, carry_over, tombstones
from postrun.store.scrub import ScrubLeft
from postrun.store.temporary import remove_abandoned, temporary_next_to
from postrun.text import is_utf8

# Daily backups are named by the UTC time they were taken, so they sort by name.
DAILY_NAME = "postrun-%Y%m%dT%H%M%SZ.db"
_DAILY_PATTERN = re.compile(r"postrun-\d{8}T\d{6}Z\.db")
_SQLITE_MAGIC = b"SQLite format 3\x00"


class StoreLock(Protocol):
    """What keeps every writer but the holder off the store (capture's lock): ``acquire`` raises
    AlreadyRunning while another holds it."""

    def acquire(self) -> object: ...

    def release(self) -> None: ...


@dataclass(frozen=True, slots=True)
class BackupCounts:
    """What a verified backup file holds."""

    path: Path
    bytes: int
    sessions: int
    steps: int
    raw_files: int  # vault rows (0 in a store from before the vault)


@dataclass(frozen=True, slots=True)
class RestoreReport:
    restored: BackupCounts
    previous: Path | None  # ``<db>.before-restore``; None when there was no store
    forgotten_again: tuple[Tombstone, ...] = ()  # in the backup, forgotten since it was made
    scrub_left: ScrubLeft | None = None  # what a reader kept their scrub from finishing
    new_machine_id: str | None = None  # restored onto another host: the store's new id for the mirror
    backup_host: str | None = None  # the host that recorded the backup's latest session


def verify_backup(path: Path) -> BackupCounts:
    """Check that ``path`` is a whole, sound Postrun store; raise StoreError naming the problem.

    The file is opened read-only and immutable: checking a backup never changes it.
    """
    where = str(path)
    if not is_utf8(where):
        raise StoreError(where, NOT_UTF8)
    if not path.is_file():
        raise StoreError(where, "no such backup file" if not path.exists() else "not a regular file")
    size = path.stat().st_size
    _check_header(path, size)
    _check_no_log_beside(path)
    try:
        connection = apsw.Connection(
            f"file:{_uri_path(path)}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
        )
    except apsw.Error as exc:
        raise StoreError(where, f"cannot open the backup ({describe_sqlite_error(exc)})") from None
    codec.register(connection)  # the integrity check evaluates an index over compressed records
    try:
        return _counts(connection, path, size)
    except apsw.Error as exc:
        raise StoreError(where, f"not a usable backup ({describe_sqlite_error(exc)})") from None
    finally:
        connection.close()


def _uri_path(path: Path) -> str:
    # Characters that mean something in a URI are escaped; the rest of the path is kept.
    return str(path.absolute()).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _check_header(path: Path, size: int) -> None:
    """A SQLite file whose length is not what its header says was cut short (or padded)."""
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise StoreError(str(path), "not a usable backup (the file is not a SQLite database)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count in the header is only valid when written by a SQLite that keeps it.
    if header[24:28] == header[92:96] and pages and page_size * pages != size:
        raise StoreError(str(path), f"truncated or padded ({size} bytes, its header says {page_size * pages})")


def _check_no_log_beside(path: Path) -> None:
    """A live store's file (copied with its ``-wal`` while a capture wrote, or from a file-level
    backup of the data folder) keeps its newest commits in that log, which the immutable read of
    a backup never looks at: restoring the file alone would drop them, and a checkpoint cut
    short leaves the file itself half updated. Refused, so that "never lose" holds; a backup of
    it made through SQLite reads the log."""
    log = Path(f"{path}-wal")
    try:
        pending = log.stat().st_size > 0
    except OSError:
        return
    if pending:
        raise StoreError(
            str(path),
            f"not a backup: its write-ahead log {log} holds writes the file alone lacks (a live store's files);"
            f" make a backup of it first: `postrun --db {path} backup NEW.db`, then restore NEW.db",
        )


def _counts(connection: apsw.Connection, path: Path, size: int) -> BackupCounts:
    where = str(path)
    problems = [str(row[0]) for row in connection.execute("pragma integrity_check(5)")]
    if problems != ["ok"]:
        raise StoreError(where, f"integrity check failed: {problems[0]}")
    version = int(connection.execute("pragma user_version").get)
    tables = {str(row[0]) for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version < 1 or not {"sessions", "steps"} <= tables:
        raise StoreError(where, "not a Postrun store")
    if version > STORE_VERSION:
        # Exit 78 as for any store a newer Postrun wrote (README, Exit codes).
        raise StoreTooNewError(
            where,
            f"written by a newer Postrun (store version {version}, this Postrun knows up to {STORE_VERSION});"
            " upgrade Postrun",
        )
    raw_files = int(connection.execute("SELECT count(*) FROM raw_files").get) if "raw_files" in tables else 0
    return BackupCounts(
        path=path,
        bytes=size,
        sessions=int(connection.execute("SELECT count(*) FROM sessions").get),
        steps=int(connection.execute("SELECT count(*) FROM steps").get),
        raw_files=raw_files,
    )


def back_up(db: Path, target: Path, *, replace: bool = False) -> BackupCounts:
    """Copy the store at ``db`` to ``target`` (0600) and verify the copy.

    ``target`` must not exist unless ``replace``. Raises StoreError (the store cannot be
    read, the copy cannot be written or fails its check) with nothing left at ``target``.
    """
    target = target.absolute()
    if not replace and (target.exists() or target.is_symlink()):
        raise PostrunError(str(target), "already exists (a backup never overwrites a file)")
    if not is_utf8(str(target)):
        raise StoreError(str(target), NOT_UTF8)
    with _source(db) as database, temporary_next_to(target) as temporary:
        try:
            copy = apsw.Connection(str(temporary))
            try:
                with copy.backup("main", database.connection, "main") as step:
                    step.step(-1)  # all pages in one read transaction: one consistent instant
                copy.execute("pragma journal_mode=delete")
                codec.register(copy)  # the rebuild re-evaluates the indexes over compressed records
                scrub.scrub_copy(copy)  # a forget's unfinished scrub: its bytes stay out of the backup
            finally:
                copy.close()
        except apsw.Error as exc:
            raise StoreError(str(target), f"cannot write the backup ({describe_sqlite_error(exc)})") from None
        _fsync(temporary)
        counts = verify_backup(temporary)
        try:
            temporary.replace(target)
        except OSError as exc:
            raise StoreError(str(target), f"cannot write the backup ({exc.strerror or exc})") from None
    _fsync(target.parent)
    return BackupCounts(target, counts.bytes, counts.sessions, counts.steps, counts.raw_files)


def _source(db: Path) -> Database:
    """The store to back up: opened as its writers open it (an older one is upgraded first), or,
    on a read-only file system or folder, read as it is: that is when a backup rescues it."""
    try:
        return Database.open(db, create=False)
    except StoreError:
        if os.access(db, os.W_OK) and os.access(db.parent, os.W_OK):
            raise
        return Database.open_reader(db)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def back_up_daily(db: Path, folder: Path, *, keep: int, now: datetime) -> tuple[BackupCounts, list[Path]]:
    """A backup named by ``now`` (UTC) in ``folder`` (created 0700), then only the newest ``keep``
    of those daily backups are left; returns the new backup and the ones removed."""
    # First of all: a killed backup's copy may be what leaves no room for this one, nor for
    # opening the store (none is there when the folder is not).
    remove_abandoned(folder, _DAILY_PATTERN.pattern, now=now.timestamp())
    with _source(db):
        pass  # the store first: a missing or unusable one leaves no backups folder (nor its parents) behind
    try:
        ensure_private_dir(folder)
    except OSError as exc:
        raise StoreError(str(folder), f"cannot create the backup folder ({exc.strerror or exc})") from None
    made = back_up(db, folder / now.strftime(DAILY_NAME))
    daily = sorted(path for path in folder.iterdir() if _DAILY_PATTERN.fullmatch(path.name))
    removed = daily[: max(len(daily) - keep, 0)]
    for path in removed:
        path.unlink()
    return made, removed


def before_restore_path(db: Path) -> Path:
    return db.with_name(db.name + ".before-restore")


def restore(
    db: Path, backup: Path, *, lock: StoreLock, now: str, host: str | None = None, keep_machine_id: bool = False
) -> RestoreReport:
    """Replace the store's content with ``backup`` after verifying it, keeping the tombstones.

    Refused (AlreadyRunning) while another holds ``lock`` (a capture); it is held meanwhile so
    none starts. The current store is first backed up to ``<db>.before-restore``. A backup
    whose latest session was recorded on another host than ``host`` gets a new machine id
    (unless ``keep_machine_id``): the team mirror tells machines apart by it, and a copy that
    kept the original's could delete the original's sessions from the mirror (a forget).
    """
    counts = verify_backup(backup)
    if backup.absolute() == db.absolute():
        raise PostrunError(str(backup), "is the store itself")
    recorded_on = backup_host(backup)
    renew = host is not None and not keep_machine_id and recorded_on != host
    try:
        # A fresh machine has no store folder yet, and the capture lock lives in it.
        ensure_private_dir(db.parent)
    except OSError as exc:
        raise StoreError(str(db.parent), f"cannot create the store folder ({exc.strerror or exc})") from None
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        raise AlreadyRunning(str(db), f"{exc.reason}; stop it before restoring") from None
    try:
        previous = None
        carried: list[Tombstone] = []
        with contextlib.ExitStack() as stack:
            source = backup
            if _same_file(backup, before_restore_path(db)):
                # Undoing a restore: the current store is about to be kept under that very
                # name, so the backup is restored from a copy taken first, not lost.
                source = stack.enter_context(_copy_of(backup, db))
            if db.exists():
                previous = back_up(db, before_restore_path(db), replace=True).path
                with Database.open(db) as current:
                    carried = tombstones(current)
            source_path, new_id = stack.enter_context(_as_new_machine(source, db)) if renew else (source, None)
            _copy_into(db, source_path)
        with Database.open(db) as restored:  # a backup from an older Postrun is migrated now
            again, left = carry_over(restored, carried, now=now)
    finally:
        lock.release()
    return RestoreReport(counts, previous, tuple(again), left, new_id, recorded_on)


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


@contextlib.contextmanager
def _copy_of(backup: Path, db: Path) -> Iterator[Path]:
    """A private copy of ``backup`` next to the store, removed afterwards."""
    with temporary_next_to(db) as temporary:
        try:
            shutil.copyfile(backup, temporary)
        except OSError as exc:
            raise StoreError(str(db), f"cannot restore ({exc.strerror or exc})") from None
        yield temporary


def _copy_into(db: Path, source_path: Path) -> None:
    with Database.open(db) as database:
        source = apsw.Connection(
            f"file:{_uri_path(source_path)}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
        )
        try:
            with database.connection.backup("main", source, "main") as step:
                step.step(-1)  # one write transaction of the store: all or nothing
        except apsw.Error as exc:
            raise StoreError(str(db), f"cannot restore ({describe_sqlite_error(exc)})") from None
        finally:
            source.close()


def backup_host(backup: Path) -> str | None:
    """The host that first recorded the backup's most recent session (None: it holds none)."""
    connection = apsw.Connection(
        f"file:{_uri_path(backup)}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    )
    try:
        host = connection.execute("SELECT captured_on FROM sessions ORDER BY ingested_at DESC LIMIT 1").get
    except apsw.Error as exc:
        raise StoreError(str(backup), f"not a usable backup ({describe_sqlite_error(exc)})") from None
    finally:
        connection.close()
    return None if host is None else str(host)


@contextlib.contextmanager
def _as_new_machine(backup: Path, db: Path) -> Iterator[tuple[Path, str | None]]:
    """A copy of ``backup`` next to the store with a new machine id: the restore then copies
    it in one transaction, so the store never holds the original's id, even for an instant."""
    with temporary_next_to(db) as temporary:
        try:
            copy = apsw.Connection(str(temporary))
            source = apsw.Connection(
                f"file:{_uri_path(backup)}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
            )
            try:
                with copy.backup("main", source, "main") as step:
                    step.step(-1)
                copy.execute("pragma journal_mode=delete")
                new_id = outbox.new_machine(copy)
            finally:
                source.close()
                copy.close()
        except apsw.Error as exc:
            raise StoreError(str(db), f"cannot restore ({describe_sqlite_error(exc)})") from None
        yield temporary, new_id
