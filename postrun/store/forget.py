"""Forgetting sessions for good, and the tombstones that keep them forgotten.

Forgetting removes a session's rows from every table (records, earlier versions, the
search index, flags, review verdicts, capture state, the vault's raw copies; the team mirror is sent a
delete through its outbox), then scrubs the store (``postrun.store.scrub``: the file rewritten
and the WAL checkpointed and truncated), so no byte of it is left in ``postrun.db``, ``-wal``
or ``-shm``. A tombstone keeps the id and the time only: capture and ``ingest`` skip a
tombstoned session unless ``ingest --force`` brings it back.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import apsw

from postrun.errors import StoreError
from postrun.store import outbox, scrub, vault
from postrun.store.db import Database, StoreMissing, describe_sqlite_error
from postrun.store.query import no_session, resolve_session_id

# The tables holding a session's content, children first; `step_search` is keyed by step rowid.
_SESSION_TABLES = ("step_flags", "verdicts", "history", "turns", "segments", "actors", "steps", "sessions")


FORGOTTEN = "forgotten"  # a tombstone's kind: ``postrun forget``
EXCLUDED = "excluded"  # removed when its workspace turned out excluded


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    """What forgetting a session removes (for the dry run)."""

    session_id: str
    steps: int
    earlier_versions: int
    raw_copies: int  # files the vault keeps (every version)
    copied_in: tuple[str, ...] = ()  # other stored sessions holding copies of its lines (forks of it)


def forget(
    db: Path, references: Sequence[str], *, apply: bool, now: str, copying: Collection[str] = ()
) -> tuple[list[ForgetPlan], scrub.ScrubLeft | None]:
    """``postrun forget``: what forgetting the sessions ``references`` name removes, and (``apply``)
    forget them; with what of the scrub is left, if a reader kept it from finishing. Every
    reference is resolved before anything is removed. ``copying``: the agents whose forks copy
    their parent's lines (``Adapter.forks_copy_lines``), whose forks each plan names."""
    try:
        database = Database.open(db, create=False)
    except StoreMissing:
        raise no_session(references[0], db) from None
    with database:
        session_ids = list(dict.fromkeys(resolve_session_id(database, reference) for reference in references))
        plans = [forget_plan(database, session_id, copying, also=session_ids) for session_id in session_ids]
        if not apply:
            return plans, None
        try:
            remove_sessions(database, session_ids, now=now)
        except apsw.Error as exc:  # another writer kept the store past the busy timeout: one line, not a traceback
            raise StoreError(str(db), f"nothing was forgotten: {describe_sqlite_error(exc)}") from None
        return plans, scrub.attempt(database)


def forget_plan(
    database: Database, session_id: str, copying: Collection[str] = (), *, also: Collection[str] = ()
) -> ForgetPlan:
    """What forgetting ``session_id`` removes; the sessions holding copies of its lines (of an
    agent in ``copying``) that are not forgotten with it (``also``)."""
    steps = int(database.execute("SELECT count(*) FROM steps WHERE session_id = ?", (session_id,)).get)
    versions = int(database.execute("SELECT count(*) FROM history WHERE session_id = ?", (session_id,)).get)
    raw = int(database.execute("SELECT count(*) FROM raw_files WHERE session_id = ?", (session_id,)).get)
    agent = database.execute("SELECT agent FROM sessions WHERE id = ?", (session_id,)).get
    copies = _copied_in(database, session_id) if agent in copying else ()
    return ForgetPlan(session_id, steps, versions, raw, tuple(other for other in copies if other not in also))


def _copied_in(database: Database, session_id: str) -> tuple[str, ...]:
    """The other sessions of its agent that hold a message step under one of its message steps'
    ids: a fork begins with copies of its parent's lines (and a parent holds the lines its fork
    copied). Messages only, whose ids are their lines' own uuids: a tool step's id is the model's
    call id, which another session may repeat, and ``@<offset>`` names a line with no uuid."""
    found = database.execute(
        "SELECT DISTINCT other.session_id FROM steps AS own"
        " JOIN steps AS other ON other.id = own.id AND other.session_id <> own.session_id"
        " JOIN sessions AS mine ON mine.id = own.session_id"
        " JOIN sessions AS theirs ON theirs.id = other.session_id AND theirs.agent = mine.agent"
        " WHERE own.session_id = ? AND own.type = 'message' AND own.id NOT LIKE '@%'"
        " ORDER BY other.session_id",
        (session_id,),
    )
    return tuple(str(other) for (other,) in found)


def forget_sessions(database: Database, session_ids: Sequence[str], *, now: str) -> scrub.ScrubLeft | None:
    """Remove the sessions (``remove_sessions``) in one transaction, then scrub; None when the
    scrub finished, else what is left of it.

    The caller resolved the ids; the capture state of a session is its rows here (the
    session book is rebuilt from them at the next start).
    """
    remove_sessions(database, session_ids, now=now)
    return scrub.attempt(database)


def remove_excluded(database: Database, session_id: str, *, now: str) -> Literal["removed", "kept", "absent"]:
    """A stored session that turns out to be in an excluded workspace: ``removed`` as a forget
    removes it, with a tombstone of kind ``excluded``, when it was stored without its workspace
    (known only now: its manifest came after its transcript); ``kept`` as it is when it was stored
    with its workspace known, before the pattern was added (the user's record: ``doctor`` lists
    it, ``forget`` removes it); ``absent`` when it is not stored. A removal's scrub is left
    pending, for whoever finishes one (capture's housekeeping, the end of ``postrun ingest``)."""
    row = database.execute("SELECT json_extract(record, '$.workspace.root') FROM sessions WHERE id = ?", (session_id,))
    stored = row.fetchone()
    if stored is None:
        return "absent"
    if stored[0]:
        return "kept"
    remove_sessions(database, [session_id], now=now, kind=EXCLUDED)
    return "removed"


def remove_sessions(database: Database, session_ids: Sequence[str], *, now: str, kind: str = FORGOTTEN) -> None:
    """Every row of the sessions removed, each tombstoned, the team mirror sent a delete and the
    scrub marked due, in one transaction (a part of the caller's, inside one)."""
    connection = database.connection
    # Zeroes what the deletes free, so the WAL's copy of the pages they change holds none of it.
    connection.execute("pragma secure_delete = on")
    try:
        with database.transaction():
            for session_id in session_ids:
                _delete_session(connection, session_id)
                outbox.enqueue(connection, session_id, now, "delete")  # the team mirror forgets it too
                # A tombstone carried over from before a restore keeps its time.
                connection.execute(
                    "INSERT INTO tombstones (session_id, forgotten_at, kind) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    (session_id, now, kind),
                )
            scrub.mark_pending(connection)
    finally:
        connection.execute("pragma secure_delete = off")


def _delete_session(connection: apsw.Connection, session_id: str) -> None:
    connection.execute(
        "DELETE FROM step_search WHERE rowid IN (SELECT rowid FROM steps WHERE session_id = ?)", (session_id,)
    )
    for table in _SESSION_TABLES:
        column = "id" if table == "sessions" else "session_id"
        connection.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))
    vault.forget_raw(connection, session_id)


@dataclass(frozen=True, slots=True)
class Tombstone:
    session_id: str
    forgotten_at: str
    kind: str = FORGOTTEN


def tombstones(database: Database, kind: str | None = None) -> list[Tombstone]:
    """The store's tombstones (of one ``kind``), by id."""
    rows = database.execute(
        "SELECT session_id, forgotten_at, kind FROM tombstones WHERE ?1 IS NULL OR kind = ?1 ORDER BY 1", (kind,)
    )
    return [Tombstone(str(session_id), str(at), str(kind)) for session_id, at, kind in rows]


def carry_over(
    database: Database, carried: Sequence[Tombstone], *, now: str
) -> tuple[list[Tombstone], scrub.ScrubLeft | None]:
    """After a restore: the tombstones the store held before it, kept, and the sessions the
    backup brought back that were forgotten since, forgotten again (returned, with what is
    left of the scrub)."""
    with database.transaction() as connection:
        connection.executemany(
            "INSERT INTO tombstones (session_id, forgotten_at, kind) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(tombstone.session_id, tombstone.forgotten_at, tombstone.kind) for tombstone in carried],
        )
    back = [
        tombstone
        for tombstone in carried
        if database.execute("SELECT 1 FROM sessions WHERE id = ?", (tombstone.session_id,)).fetchone()
    ]
    left = forget_sessions(database, [tombstone.session_id for tombstone in back], now=now) if back else None
    return back, left


def is_forgotten(database: Database, session_id: str) -> bool:
    return tombstone_kind(database, session_id) is not None


def tombstone_kind(database: Database, session_id: str) -> str | None:
    """Why the session is tombstoned (``FORGOTTEN``, ``EXCLUDED``); None when it is not."""
    row = database.execute("SELECT kind FROM tombstones WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None else str(row[0])


def tombstone_kinds(database: Database) -> dict[str, str]:
    return {
        str(session_id): str(kind) for session_id, kind in database.execute("SELECT session_id, kind FROM tombstones")
    }


def lift_tombstone(database: Database, session_id: str) -> bool:
    """Remove the session's tombstone; True when there was one."""
    with database.transaction() as connection:
        removed = connection.execute(
            "DELETE FROM tombstones WHERE session_id = ? RETURNING 1", (session_id,)
        ).fetchone()
    return removed is not None
