"""The store's SQLite file: opening, pragmas, permissions and schema migrations.

This module and its siblings in ``postrun.store`` are the only code that speaks SQL.
The store is one file (plus SQLite's ``-wal`` and ``-shm``) in WAL mode, private to
the user (folder 0700 when Postrun creates it, files 0600 whatever the umask).

Two ways in: ``Database.open`` for a writer (it creates, tightens, switches to WAL and
migrates) and ``Database.open_reader`` for everything that only reads (it changes nothing).
"""

from __future__ import annotations

import contextlib
import os
import stat
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from postrun.errors import StoreError, StoreTooNewError, StoreTooOldError
from postrun.paths import ensure_private_dir
from postrun.store import codec
from postrun.store.migrations import MIGRATIONS
from postrun.text import is_utf8

BUSY_TIMEOUT_MS = 5000
# SQLite's largest integer: a LIMIT past it cannot be bound, and no store has that many rows.
MAX_INTEGER = 2**63 - 1
# What ``at_commit`` holds back at most (rows; a search-index row is a step's text, a few KB):
# beyond it, the rows are written between two parts of the transaction, so a long batch's
# memory stays bounded and the index still gets one segment per many sessions.
DEFERRED_ROWS = 2000
STORE_VERSION = len(MIGRATIONS)
_FILE_MODE = 0o600
_SIDE_FILES = ("-wal", "-shm")
_SQLITE_HEADER = b"SQLite format 3\x00"
_NO_STORE_YET = "no store yet (run `postrun ingest` or `postrun capture`)"
NOT_UTF8 = "cannot use this path: it is not valid UTF-8, and SQLite takes UTF-8 file names"


class StoreMissing(StoreError):
    """There is no store file yet (only raised when the caller asked not to create one)."""


def _create_private_file(path: Path) -> None:
    """Create an empty 0600 database file, so SQLite's -wal and -shm inherit its mode."""
    if not path.parent.exists():
        # Only a folder Postrun creates is made private: an existing one (say /tmp) is not ours.
        ensure_private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _FILE_MODE)
        os.close(fd)


def _make_private(path: Path) -> None:
    for candidate in (path, *(Path(f"{path}{suffix}") for suffix in _SIDE_FILES)):
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(candidate.stat().st_mode) != _FILE_MODE:
                candidate.chmod(_FILE_MODE)


def _sqlite_or_empty(path: Path) -> bool:
    """Whether the file is empty or starts with SQLite's header (read only, never written)."""
    with path.open("rb") as handle:
        header = handle.read(len(_SQLITE_HEADER))
    return header in (b"", _SQLITE_HEADER)


def _alone_on_read_only_disk(path: Path) -> bool:
    """Whether the store's file is the whole store on a read-only file system: no `-shm` (no
    process has it open) and no write-ahead log holding commits the file lacks."""
    try:
        if not os.statvfs(path.parent).f_flag & os.ST_RDONLY or os.path.lexists(f"{path}-shm"):
            return False
        log = Path(f"{path}-wal")
        return not log.exists() or log.stat().st_size == 0
    except OSError:
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino)


def _connect(path: Path, *, create: bool, read_only: bool, immutable: bool = False) -> apsw.Connection:
    """A connection to ``path`` (absolute), opened only once the file is known to be a store or
    empty (as Postrun creates it): a mistyped --db must not change someone's file. ``immutable``:
    the file read alone, with no lock and no side file (SQLite's ``immutable`` URI parameter)."""
    if path.is_dir():
        raise StoreError(str(path), "is a folder; the store is a file (e.g. <folder>/postrun.db)")
    if not is_utf8(str(path)):  # SQLite takes file names as UTF-8: refused before anything is created
        raise StoreError(str(path), NOT_UTF8)
    try:
        # An empty file is no store yet: a read leaves it as it is, a write makes it one.
        if not path.exists() or (not create and path.stat().st_size == 0):
            if not create:
                raise StoreMissing(str(path), _NO_STORE_YET)
            _create_private_file(path)
        elif not _sqlite_or_empty(path):
            raise StoreError(str(path), "cannot use the store (the file is not a SQLite database)")
        flags = apsw.SQLITE_OPEN_READONLY if read_only else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        name = str(path)
        if immutable:
            name = f"file:{urllib.parse.quote(name)}?immutable=1"
            flags |= apsw.SQLITE_OPEN_URI
        connection = apsw.Connection(name, flags=flags | apsw.SQLITE_OPEN_NOFOLLOW)
    except apsw.Error as exc:
        raise StoreError(str(path), f"cannot open the store ({describe_sqlite_error(exc)})") from None
    except OSError as exc:
        action = "read" if read_only else "create"
        raise StoreError(str(path), f"cannot {action} the store ({exc.strerror or exc})") from None
    # Before the first read: a reader that meets another connection's lock (a writer, or
    # the last one's checkpoint on close) waits for it rather than failing at once.
    connection.set_busy_timeout(BUSY_TIMEOUT_MS)
    return connection


def connect_writer(path: Path) -> apsw.Connection:
    """One more read-write connection to an existing store, for work beside its writer
    (``postrun.store.checkpoints``)."""
    return _connect(path, create=False, read_only=False)


class SharedPart:
    """Parts of a transaction sharing one savepoint (``Database.shared_part``)."""

    spoiled = False  # a part failed: the shared part is rolled back as it ends


class Database:
    """An open connection to the store, at the current schema (a writer's migrated it)."""

    def __init__(self, path: Path, connection: apsw.Connection) -> None:
        self.path = path
        self.connection = connection
        self._identity = _identity(path)
        self._at_commit: list[tuple[str, list[tuple[Any, ...]]]] = []
        self._transaction_open = False  # one that ``transaction`` began (and will commit)
        self._savepoints = 0  # open inside it
        self._shared: SharedPart | None = None  # the parts begun now join it (``shared_part``)

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> Database:
        """Open (and when ``create``, create) the store at ``path``.

        Raises StoreMissing when the file does not exist and ``create`` is false,
        StoreTooNewError when a newer Postrun wrote it, StoreError otherwise.
        """
        path = path.absolute()
        connection = _connect(path, create=create, read_only=False)
        database = cls(path, connection)
        try:
            database._checked_version()
            _make_private(path)
            database._configure()
            database._migrate()
        except (StoreError, StoreTooNewError):
            connection.close()
            raise
        except apsw.Error as exc:
            connection.close()
            raise StoreError(str(path), f"cannot use the store ({describe_sqlite_error(exc)})") from None
        except OSError as exc:
            connection.close()
            raise StoreError(str(path), f"cannot make the store private ({exc.strerror or exc})") from None
        _make_private(path)
        return database

    @classmethod
    def open_reader(cls, path: Path, *, immutable: bool = False) -> Database:
        """The store opened read-only, for every command, page or process that only reads.

        It changes nothing: no WAL switch, no migration, no chmod, no store created; the file's
        bytes and mtime stay as they were, and a file in rollback mode (a backup) gets no
        ``-wal`` or ``-shm`` beside it. (A WAL-mode store that no process has open, so without
        its ``-wal`` and ``-shm``, gets them back empty, with its own mode, as SQLite gives them
        to any reader of such a file.) A writer's commits, of this or another process, show at
        the reader's next transaction: the connection may be held as long as needed.

        ``immutable`` reads the file alone, without locks and without creating the ``-wal`` and
        ``-shm``: only for a caller that checks afterwards that no writer came in meanwhile
        (``postrun.store.snapshot``).

        Raises StoreMissing (no file, an empty one, or a database with nothing in it yet),
        StoreTooOldError (an older Postrun wrote it: a writer, ``capture`` or ``ingest``, upgrades
        it), StoreTooNewError, and StoreError otherwise (not a Postrun store, cannot be read).
        """
        path = path.absolute()
        connection = _connect(path, create=False, read_only=True, immutable=immutable)
        database = cls(path, connection)
        try:
            version = database._checked_version()
            if version == 0:
                raise StoreMissing(str(path), _NO_STORE_YET)  # an empty database Postrun has not set up
            if version < STORE_VERSION:
                raise StoreTooOldError(
                    str(path),
                    f"written by an older Postrun (store version {version}, this Postrun reads version"
                    f" {STORE_VERSION}); run postrun capture or postrun ingest once to upgrade it",
                )
        except StoreError:
            connection.close()
            raise
        except apsw.Error as exc:
            connection.close()
            if isinstance(exc, apsw.CantOpenError) and not immutable and _alone_on_read_only_disk(path):
                # A WAL-mode store on a read-only file system (a disk remounted read-only after
                # errors, an old disk mounted to rescue it): SQLite cannot create the `-shm` every
                # WAL reader needs. No process has it open (no `-shm`) and no `-wal` holds commits
                # beside it, so the file alone is the whole store: it is read alone (README: reading
                # opens the store read-only; a backup is how it is rescued).
                return cls.open_reader(path, immutable=True)
            raise StoreError(str(path), f"cannot use the store ({describe_sqlite_error(exc)})") from None
        codec.register(connection)
        return database

    def _checked_version(self) -> int:
        """The store's schema version, read before anything is changed: StoreError for another
        program's database (version 0 with tables of its own), StoreTooNewError for a newer Postrun's."""
        version = self.user_version()
        if version == 0 and self.connection.execute("SELECT count(*) FROM sqlite_schema").get:
            raise StoreError(
                str(self.path), "cannot use the store (not a Postrun store: an SQLite database of something else)"
            )
        if version > STORE_VERSION:
            raise StoreTooNewError(
                str(self.path),
                f"written by a newer Postrun (store version {version}, this Postrun knows up to "
                f"{STORE_VERSION}); upgrade Postrun",
            )
        return version

    def _configure(self) -> None:
        connection = self.connection
        # The write lock is taken at BEGIN, so the busy timeout applies there and a
        # reader never has to upgrade to a writer mid-transaction.
        connection.transaction_mode = "IMMEDIATE"
        mode = connection.execute("pragma journal_mode=wal").get
        if str(mode).lower() != "wal":
            raise StoreError(str(self.path), f"cannot switch the store to WAL mode (got {mode})")
        connection.execute("pragma synchronous=normal")
        connection.execute("pragma foreign_keys=on")
        codec.register(connection)

    def _migrate(self) -> None:
        if self.user_version() == STORE_VERSION:
            return
        with self.transaction():
            # Re-read inside the write transaction: another process may have migrated (or a newer
            # Postrun written) it.
            version = self._checked_version()
            for number in range(version, STORE_VERSION):
                self.connection.execute(MIGRATIONS[number])
            self.connection.execute(f"pragma user_version={STORE_VERSION}")

    def user_version(self) -> int:
        return int(self.connection.execute("pragma user_version").get)

    def integrity_problems(self) -> list[str]:
        """SQLite's integrity check: ``["ok"]`` for a sound file, else what is wrong."""
        return [str(row[0]) for row in self.connection.execute("pragma integrity_check")]

    def identity_changed(self) -> bool:
        """True when the file at ``path`` is no longer the one this connection opened."""
        return _identity(self.path) != self._identity

    @contextlib.contextmanager
    def transaction(self) -> Iterator[apsw.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on error).

        It begins with ``execute``, which releases the GIL while SQLite's busy handler waits for
        the write lock; apsw's ``with connection`` keeps the GIL meanwhile, so a second writing
        thread of this process (capture's mirror) that holds the lock could never finish, and
        both would wait out the busy timeout. After some errors (a full disk, for one) SQLite
        has already rolled the transaction back by itself: then there is nothing to roll back,
        and the first error is what the user hears.
        """
        connection = self.connection
        if not connection.getautocommit() and self._shared is not None:
            # A part of a shared part: its failure is the shared part's (see ``shared_part``).
            shared = self._shared
            try:
                yield connection
            except BaseException:
                shared.spoiled = True
                raise
            return
        if not connection.getautocommit():
            # Inside a caller's transaction (a batched ingest's transaction): a savepoint, so this part is
            # all or nothing on its own and the rest of the transaction stays.
            # What was held back when this part began: rolled back, the part also undoes what it
            # ran of it (``run_deferred`` before a step is unindexed), which is then held again.
            deferred = list(self._at_commit)
            connection.execute("SAVEPOINT part")
            self._savepoints += 1
            try:
                yield connection
                connection.execute("RELEASE part")
            except BaseException:
                self._at_commit = deferred
                if not connection.getautocommit():
                    connection.execute("ROLLBACK TO part; RELEASE part")
                raise
            finally:
                self._savepoints -= 1
            self._between_parts()
            return
        connection.execute("BEGIN IMMEDIATE")
        self._transaction_open = True
        try:
            yield connection
            self.run_deferred()
            connection.execute("COMMIT")
        except BaseException:
            self._at_commit.clear()
            if not connection.getautocommit():
                connection.execute("ROLLBACK")
            raise
        finally:
            self._transaction_open = False

    @contextlib.contextmanager
    def shared_part(self) -> Iterator[SharedPart]:
        """One savepoint for the parts (``transaction``) begun inside it, in the transaction in
        progress: a savepoint a part costs a batched ingest of small sessions about 3 % of its time
        (SQLite journals every page a savepoint changes). When any part fails (an exception
        leaves it), the whole shared part is rolled back once it ends, and ``spoiled`` says so:
        the caller then does each of its parts again on its own, so that only the one that
        failed is left out."""
        connection = self.connection
        if connection.getautocommit() or self._shared is not None:
            raise RuntimeError("a shared part is a part of a transaction in progress, and not of another")
        deferred = list(self._at_commit)
        connection.execute("SAVEPOINT shared")
        shared = self._shared = SharedPart()
        try:
            yield shared
        except BaseException:
            shared.spoiled = True
            raise
        finally:
            self._shared = None
            if shared.spoiled:
                self._at_commit = deferred
                if not connection.getautocommit():
                    connection.execute("ROLLBACK TO shared; RELEASE shared")
            elif not connection.getautocommit():
                connection.execute("RELEASE shared")
        if not shared.spoiled:
            self._between_parts()

    def _between_parts(self) -> None:
        if self._savepoints == 0 and sum(len(rows) for _, rows in self._at_commit) >= DEFERRED_ROWS:
            # Between two parts, outside any savepoint: what is run now is rolled back
            # only with the whole transaction, as it would be at the commit.
            self.run_deferred()

    def at_commit(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """``executemany(sql, rows)`` just before the transaction in progress commits (never, if
        the part of it that asked is rolled back).

        For writes to the search index: FTS5 writes the terms it holds in memory out to a new
        segment of the index at every savepoint, so indexing each session of a batched ingest inside
        its own savepoint writes (and later merges) one small segment per session; indexed at
        the commit (or, past ``DEFERRED_ROWS``, between two parts), many sessions make one.
        """
        if self._transaction_open:
            self._at_commit.append((sql, rows))
        else:  # a transaction begun elsewhere: nothing here would see it commit
            self.connection.executemany(sql, rows)

    def run_deferred(self) -> None:
        """Run what ``at_commit`` put off, now (before a statement that must see it)."""
        deferred, self._at_commit = self._at_commit, []
        for sql, rows in deferred:
            self.connection.executemany(sql, rows)

    def execute(self, sql: str, bindings: Any = None) -> apsw.Cursor:
        return self.connection.execute(sql, bindings)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def reading(path: Path) -> Iterator[Database | None]:
    """The store at ``path`` opened read-only (``Database.open_reader``) for one read, closed after
    it; None when there is no store yet."""
    try:
        database = Database.open_reader(path)
    except StoreMissing:
        yield None
        return
    try:
        yield database
    finally:
        database.close()


def describe_sqlite_error(exc: apsw.Error) -> str:
    """A short reason for a SQLite error, without SQLite's error-code prefix."""
    if isinstance(exc, apsw.NotADBError):
        return "the file is not a SQLite database"
    if isinstance(exc, apsw.CorruptError):
        return "the database file is corrupt"
    if isinstance(exc, apsw.BusyError):
        return "the database is locked by another process"
    if isinstance(exc, apsw.FullError):
        return "the disk or database is full"
    if isinstance(exc, apsw.CantOpenError | apsw.PermissionsError | apsw.ReadOnlyError):
        return "permission denied or not writable"
    return str(exc).split(":", 1)[-1].strip() or type(exc).__name__
