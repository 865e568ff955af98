"""Pushing the outbox to PostgreSQL: batches of sessions, each batch one PostgreSQL transaction.

A batch is marked done in the store only after PostgreSQL committed it, so a push cut short
anywhere (the server killed, the connection dropped, this process killed) is pushed again,
and applying a batch twice changes nothing: every write is an upsert by the record's key
that skips an unchanged digest. Only what the mirror does not hold yet is sent: the store's
step digests are compared with the mirror's, history entries newer than its last are added.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import psycopg
from psycopg import sql

from postrun.errors import AlreadyRunning, PostrunError, StoreError
from postrun.mirror.pgerrors import Refusal, describe_pg_error, refusal
from postrun.mirror.rows import Origin, history_values, pg_json, session_values, step_values
from postrun.mirror.schema import ensure_schema
from postrun.mirror.target import MirrorTarget, check_options
from postrun.store import outbox
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.outbox import Change, Keyed, Known
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
class Pushed:
    sessions: int
    steps: int


class Pusher:
    """One store and one PostgreSQL connection, for pushing batches from the outbox."""

    def __init__(self, target: MirrorTarget, database: Database, origin: Origin) -> None:
        self.target = target
        self.database = database
        self.origin = origin
        self.connection: Connection | None = None

    @property
    def where(self) -> str:
        return f"mirror {self.target.label}"

    def connected(self) -> Connection:
        """The connection, opened (schema created or migrated, whole store queued for a
        database this store has not pushed to yet) when there is none."""
        if self.connection is not None and not self.connection.closed:
            return self.connection
        connection = connect(self.target)
        try:
            database_id = ensure_schema(connection, self.where)
        except psycopg.Error as exc:
            connection.close()
            raise mirror_error(self.where, exc) from None
        except PostrunError:
            connection.close()
            raise
        if outbox.state(self.database, "database_id") != database_id:
            outbox.queue_every_session(self.database, utc_now(timespec="milliseconds"), database_id)
        self.connection = connection
        return connection

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

    def push_batch(self, limit: int = BATCH_SESSIONS) -> Pushed | None:
        """Push up to ``limit`` waiting sessions; None when none is waiting. Raises MirrorError.

        It connects first even when nothing waits: a database this store has not pushed to
        yet queues the whole store. A connection that was lost while idle (a server restart,
        a terminated backend) is replaced at once, so the reason reported is the real one."""
        reused = self.connection is not None and not self.connection.closed
        try:
            return self._push_batch(limit)
        except MirrorError:
            if not reused:
                raise
        return self._push_batch(limit)

    def _push_batch(self, limit: int) -> Pushed | None:
        try:
            connection = self.connected()
            session_ids = outbox.waiting(self.database, limit)
            if not session_ids:
                return None
            known = _known(connection, self.origin.machine_id, session_ids)
            changes = outbox.read_changes(self.database, session_ids, known)
            with connection.transaction():
                steps = _apply(connection, self.origin, changes)
            outbox.mark_pushed(
                self.database, [(c.session_id, c.version) for c in changes], utc_now(timespec="milliseconds")
            )
        except psycopg.Error as exc:
            self.disconnect()
            raise mirror_error(self.where, exc) from None
        except apsw.Error as exc:
            # Pushed but not marked (the store is locked or full): it is pushed again, to no effect.
            raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        return Pushed(len(changes), steps)

    def drain(
        self, *, stop: Callable[[], bool] = lambda: False, on_batch: Callable[[Pushed], None] = lambda pushed: None
    ) -> Pushed:
        """Push batches until none is waiting (or ``stop``); the totals."""
        sessions = steps = 0
        while not stop():
            pushed = self.push_batch()
            if pushed is None:
                break
            sessions, steps = sessions + pushed.sessions, steps + pushed.steps
            on_batch(pushed)
        return Pushed(sessions, steps)


def _known(connection: Connection, machine_id: str, session_ids: Sequence[str]) -> dict[str, Known]:
    digests: dict[str, dict[str, str]] = {}
    for session_id, step_id, step_digest in connection.execute(
        "SELECT session_id, step_id, digest FROM postrun.steps WHERE machine_id = %s AND session_id = ANY(%s)",
        (machine_id, list(session_ids)),
    ):
        digests.setdefault(session_id, {})[step_id] = step_digest
    last: dict[str, int] = dict(
        connection.execute(
            "SELECT session_id, max(history_id) FROM postrun.history"
            " WHERE machine_id = %s AND session_id = ANY(%s) GROUP BY session_id",
            (machine_id, list(session_ids)),
        ).fetchall()
    )
    return {
        session_id: Known(digests.get(session_id, {}), last.get(session_id, 0))
        for session_id in set(digests) | set(last)
    }


_ORIGIN = "machine_id, host, os_user, session_id"
_SESSION_UPSERT = f"""
INSERT INTO postrun.sessions ({_ORIGIN}, agent, started_at, ended_at, workspace, model, provider, agent_title,
    agent_status, git_branch, cost_usd, record, digest, captured_on, ingested_at, updated_at, mirrored_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, clock_timestamp())
ON CONFLICT (machine_id, session_id) DO UPDATE SET host = excluded.host, os_user = excluded.os_user,
    agent = excluded.agent, started_at = excluded.started_at, ended_at = excluded.ended_at,
    workspace = excluded.workspace, model = excluded.model, provider = excluded.provider,
    agent_title = excluded.agent_title, agent_status = excluded.agent_status, git_branch = excluded.git_branch,
    cost_usd = excluded.cost_usd, record = excluded.record, digest = excluded.digest,
    captured_on = excluded.captured_on, ingested_at = excluded.ingested_at, updated_at = excluded.updated_at,
    mirrored_at = excluded.mirrored_at
"""
_STEP_UPSERT = f"""
INSERT INTO postrun.steps ({_ORIGIN}, step_id, seq, turn_id, at, type, outcome, decision, command, exit_code,
    path, flags, payload, record, digest)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s)
ON CONFLICT (machine_id, session_id, step_id) DO UPDATE SET host = excluded.host, os_user = excluded.os_user,
    seq = excluded.seq, turn_id = excluded.turn_id, at = excluded.at, type = excluded.type,
    outcome = excluded.outcome, decision = excluded.decision, command = excluded.command,
    exit_code = excluded.exit_code, path = excluded.path, flags = excluded.flags, payload = excluded.payload,
    record = excluded.record, digest = excluded.digest
WHERE postrun.steps.digest IS DISTINCT FROM excluded.digest
"""
_HISTORY_INSERT = f"""
INSERT INTO postrun.history ({_ORIGIN}, history_id, kind, record_id, record, digest, reason, replaced_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s)
ON CONFLICT DO NOTHING
"""
# table, key column, whether it has idx besides its key
_KEYED_TABLES = (("segments", "idx", False), ("actors", "actor_id", False), ("turns", "turn_id", True))


def _apply(connection: Connection, origin: Origin, changes: Sequence[Change]) -> int:
    """Write ``changes`` (inside the caller's transaction); returns how many steps were sent."""
    machine = origin.machine_id
    with connection.cursor() as cursor:
        purged = [(machine, c.session_id) for c in changes if c.purge or c.session is None]
        if purged:  # the rest of the session's rows go with it (ON DELETE CASCADE)
            cursor.executemany("DELETE FROM postrun.sessions WHERE machine_id = %s AND session_id = %s", purged)
        kept = [c for c in changes if c.session is not None]
        if not kept:
            return 0
        cursor.executemany(
            _SESSION_UPSERT,
            [session_values(origin, c.session_id, c.session) for c in kept if c.session is not None],
        )
        for table, key, indexed in _KEYED_TABLES:
            _sync_keyed(cursor, origin, kept, table, key, indexed)
        stale = [(machine, c.session_id, list(c.removed_steps)) for c in kept if c.removed_steps]
        if stale:
            cursor.executemany(
                "DELETE FROM postrun.steps WHERE machine_id = %s AND session_id = %s AND step_id = ANY(%s)", stale
            )
        steps = [step_values(origin, c.session_id, step) for c in kept for step in c.steps]
        if steps:
            cursor.executemany(_STEP_UPSERT, steps)
        history = [history_values(origin, c.session_id, entry) for c in kept for entry in c.history]
        if history:
            cursor.executemany(_HISTORY_INSERT, history)
    return len(steps)


def _sync_keyed(
    cursor: psycopg.Cursor[tuple[Any, ...]],
    origin: Origin,
    changes: Sequence[Change],
    table: str,
    key: str,
    indexed: bool,
) -> None:
    """Segments, actors and turns are few per session: upsert them all, drop the ones gone."""
    name = sql.Identifier("postrun", table)
    key_column = sql.Identifier(key)
    extra = sql.SQL(", idx") if indexed else sql.SQL("")
    extra_value = sql.SQL(", %s") if indexed else sql.SQL("")
    extra_set = sql.SQL(", idx = excluded.idx") if indexed else sql.SQL("")
    upsert = sql.SQL(
        "INSERT INTO {name} (machine_id, host, os_user, session_id, {key}, record, digest{extra})"
        " VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s{extra_value})"
        " ON CONFLICT (machine_id, session_id, {key}) DO UPDATE SET host = excluded.host,"
        " os_user = excluded.os_user, record = excluded.record, digest = excluded.digest{extra_set}"
        " WHERE {name}.digest IS DISTINCT FROM excluded.digest"
    ).format(name=name, key=key_column, extra=extra, extra_value=extra_value, extra_set=extra_set)
    records: dict[str, tuple[Keyed, ...]] = {c.session_id: getattr(c, table) for c in changes}
    cursor.executemany(
        sql.SQL("DELETE FROM {name} WHERE machine_id = %s AND session_id = %s AND NOT ({key} = ANY(%s))").format(
            name=name, key=key_column
        ),
        [(origin.machine_id, session_id, [r.key for r in rows]) for session_id, rows in records.items()],
    )
    values = [
        (*origin.columns, session_id, r.key, pg_json(r.record), r.digest, *((r.index,) if indexed else ()))
        for session_id, rows in records.items()
        for r in rows
    ]
    if values:
        cursor.executemany(upsert, values)


def machine_origin(database: Database, host: str, os_user: str) -> Origin:
    return Origin(outbox.machine_id(database), host, os_user)


def local_origin(database: Database) -> Origin:
    """This machine: the store's id, the host name, the OS user running Postrun."""
    import pwd
    import socket

    return machine_origin(database, socket.gethostname(), pwd.getpwuid(os.getuid()).pw_name)
