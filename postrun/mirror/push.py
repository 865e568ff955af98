"""Pushing the outbox to PostgreSQL: batches of sessions, each batch one PostgreSQL transaction.

A batch is marked done in the store only after PostgreSQL committed it, so a push cut short
anywhere (the server killed, the connection dropped, this process killed) is pushed again,
and applying a batch twice changes nothing: every write is an upsert by the record's key
that skips an unchanged digest. Only what the mirror does not hold yet is sent: the store's
step digests are compared with the mirror's, history entries newer than its last are added.

A batch the server refuses for what one session holds (a value out of range, an index row too
large) is sent again one session per transaction: the others reach the mirror, the refused one
is named with the server's reason, stays queued and is tried again at the next push.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import psycopg

from postrun.errors import AlreadyRunning, PostrunError, StoreError
from postrun.mirror.batch import apply, known
from postrun.mirror.pgerrors import Refusal, describe_pg_error, not_an_echo, refusal, refuses_rows
from postrun.mirror.reconcile import Drift, drift, mirrored
from postrun.mirror.rows import Origin, Scrub, redaction_of
from postrun.mirror.schema import ensure_schema
from postrun.mirror.target import MirrorTarget, check_options
from postrun.store import outbox
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.outbox import Change
from postrun.timestamps import utc_now

BATCH_SESSIONS = 50
# libpq waits as long as the OS for a server that does not answer; the mirror must notice.
_CONNECTION_DEFAULTS = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "application_name": "postrun",
}

Connection = psycopg.Connection[tuple[Any, ...]]
# The server's error is reported once, by the mirror (one line), not again by psycopg.
logging.getLogger("psycopg").addFilter(not_an_echo)


class MirrorError(PostrunError):
    """The mirror cannot be reached or written now (``reason`` says why); retried later.
    ``refusal``: whether the server answered and refused the login or a permission."""

    def __init__(self, where: str, reason: str, refusal: Refusal = "unreachable") -> None:
        super().__init__(where, reason)
        self.refusal = refusal


def mirror_error(where: str, exc: psycopg.Error) -> MirrorError:
    return MirrorError(where, describe_pg_error(exc), refusal(exc))


def conninfo(target: MirrorTarget) -> str:
    """The URI with Postrun's defaults added; ConfigError (78) for an option libpq refuses."""
    check_options(target)
    try:
        given = psycopg.conninfo.conninfo_to_dict(target.url)
    except psycopg.ProgrammingError as exc:  # an unknown option: libpq's own list decides
        raise target.config_error(
            describe_pg_error(exc).replace("invalid URI query parameter:", "unknown option")
        ) from None
    options = {key: value for key, value in _CONNECTION_DEFAULTS.items() if key not in given}
    return psycopg.conninfo.make_conninfo(target.url, **options)


def connect(target: MirrorTarget) -> Connection:
    """A connection in autocommit mode (transactions are explicit); raises MirrorError, or
    ConfigError for options libpq refuses."""
    info = conninfo(target)
    try:
        # No server-side prepared statements: a pooler in transaction mode (PgBouncer, managed
        # poolers) would hand them to another connection.
        return psycopg.connect(info, autocommit=True, prepare_threshold=None)
    except psycopg.Error as exc:
        raise mirror_error(f"mirror {target.label}", exc) from None


@contextlib.contextmanager
def push_lock(path: Path) -> Iterator[None]:
    """One push of a store at a time (capture's, or `postrun mirror push`): two at once could
    each mark the other's newer change done."""
    handle = path.open("a")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AlreadyRunning(
                str(path), "another postrun is pushing this store right now; try again in a moment"
            ) from None
        yield
    finally:
        handle.close()


@dataclass(frozen=True, slots=True)
class Refused:
    """A session the server refused (``reason``, its words): left queued."""

    session_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Pushed:
    sessions: int
    steps: int
    refused: tuple[Refused, ...] = ()


class Pusher:
    """One store and one PostgreSQL connection, for pushing batches from the outbox."""

    def __init__(self, target: MirrorTarget, database: Database, origin: Origin, *, redact: bool = True) -> None:
        self.target = target
        self.database = database
        self.origin = origin
        self.redact = redact  # False: mirror_redact = false, records sent as stored
        self.connection: Connection | None = None
        self.drifted: Drift | None = None  # what the last connection found the mirror lacking

    @property
    def redaction(self) -> str:
        return redaction_of(self.redact)

    @property
    def where(self) -> str:
        return f"mirror {self.target.label}"

    def connected(self) -> Connection:
        """The connection, opened when there is none: the schema created or migrated, the
        whole store queued for a database this store has not pushed to yet, and what the
        mirror lacks or holds otherwise (``reconcile``) queued."""
        if self.connection is not None and not self.connection.closed:
            return self.connection
        connection = connect(self.target)
        try:
            database_id = ensure_schema(connection, self.where)
            now = utc_now(timespec="milliseconds")
            if outbox.state(self.database, "database_id") != database_id:
                outbox.queue_every_session(self.database, now, database_id)
            found = drift(outbox.held(self.database), mirrored(connection, self.origin.machine_id), self.redaction)
        except psycopg.Error as exc:
            connection.close()
            raise mirror_error(self.where, exc) from None
        except BaseException:
            connection.close()
            raise
        if found.sessions:
            outbox.requeue(self.database, now, send=found.missing, purge=(*found.stale, *found.forgotten))
        self.drifted = found
        self.connection = connection
        return connection

    def resend_everything(self) -> int:
        """Queue every stored session to be deleted from the mirror and sent again whole
        (``mirror push --all``); returns how many."""
        self.connected()
        sessions = list(outbox.held(self.database).sessions)
        outbox.requeue(self.database, utc_now(timespec="milliseconds"), purge=sessions)
        return len(sessions)

    def cancel(self) -> None:
        """From another thread: interrupt the statement in progress (stopping capture)."""
        connection = self.connection
        if connection is not None and not connection.closed:
            with contextlib.suppress(psycopg.Error):
                connection.cancel_safe(timeout=1)

    def disconnect(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(psycopg.Error):
                self.connection.close()
            self.connection = None

    def push_batch(self, limit: int = BATCH_SESSIONS, skip: Collection[str] = ()) -> Pushed | None:
        """Push up to ``limit`` waiting sessions, not those in ``skip``; None when none is
        waiting. Raises MirrorError.

        It connects first even when nothing waits: a database this store has not pushed to
        yet queues the whole store. A connection that was lost while idle (a server restart,
        a terminated backend) is replaced at once, so the reason reported is the real one."""
        reused = self.connection is not None and not self.connection.closed
        try:
            return self._push_batch(limit, skip)
        except MirrorError:
            if not reused:
                raise
        return self._push_batch(limit, skip)

    def _push_batch(self, limit: int, skip: Collection[str]) -> Pushed | None:
        try:
            connection = self.connected()
            session_ids = outbox.waiting(self.database, limit, skip)
            if not session_ids:
                return None
            held = known(connection, self.origin.machine_id, session_ids)
            changes = outbox.read_changes(self.database, session_ids, held)
            sent, steps, refused = self._apply(connection, changes)
            outbox.mark_pushed(
                self.database, [(c.session_id, c.version) for c in sent], utc_now(timespec="milliseconds")
            )
        except psycopg.Error as exc:
            self.disconnect()
            raise mirror_error(self.where, exc) from None
        except apsw.Error as exc:
            # Pushed but not marked (the store is locked or full): it is pushed again, to no effect.
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        return Pushed(len(sent), steps, refused)

    def _apply(
        self, connection: Connection, changes: Sequence[Change]
    ) -> tuple[list[Change], int, tuple[Refused, ...]]:
        """The batch in one transaction; when the server refuses a row, each session in its
        own, so one session it refuses never keeps the others from the mirror. Returns what
        was committed, its steps and the sessions refused."""
        scrub = Scrub.of(self.redact)
        try:
            with connection.transaction():
                return list(changes), apply(connection, self.origin, changes, scrub), ()
        except psycopg.Error as exc:
            if not refuses_rows(exc):
                raise
            if len(changes) == 1:
                return [], 0, (Refused(changes[0].session_id, describe_pg_error(exc)),)
        sent: list[Change] = []
        refused: list[Refused] = []
        steps = 0
        for change in changes:
            try:
                with connection.transaction():
                    steps += apply(connection, self.origin, [change], scrub)
            except psycopg.Error as exc:
                if not refuses_rows(exc):
                    raise  # those committed are sent again by the next push, to no effect
                refused.append(Refused(change.session_id, describe_pg_error(exc)))
            else:
                sent.append(change)
        return sent, steps, tuple(refused)

    def drain(
        self,
        *,
        stop: Callable[[], bool] = lambda: False,
        on_batch: Callable[[Pushed], None] = lambda pushed: None,
        skip: Collection[str] = (),
    ) -> Pushed:
        """Push batches until none is waiting (or ``stop``); the totals. A session the server
        refuses is not tried again in this drain; ``skip``: nor are these."""
        sessions = steps = 0
        refused: list[Refused] = []
        passed = set(skip)
        while not stop():
            pushed = self.push_batch(skip=passed)
            if pushed is None:
                break
            sessions, steps = sessions + pushed.sessions, steps + pushed.steps
            refused.extend(pushed.refused)
            passed.update(entry.session_id for entry in pushed.refused)
            on_batch(pushed)
        return Pushed(sessions, steps, tuple(refused))


def machine_origin(database: Database, host: str, os_user: str) -> Origin:
    return Origin(outbox.machine_id(database), host, os_user)


def local_origin(database: Database) -> Origin:
    """This machine: the store's id, the host name, the OS user running Postrun."""
    import pwd
    import socket

    return machine_origin(database, socket.gethostname(), pwd.getpwuid(os.getuid()).pw_name)
