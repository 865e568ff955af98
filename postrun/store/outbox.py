"""The team mirror's side of the store: the outbox of sessions waiting to be mirrored, the
machine's identity, and reading a session's records as a push sends them.

The outbox holds one row per session: a session that changes again before it is pushed is
still one row, whose ``version`` grows. A push reads the records and the version in one
snapshot and, after PostgreSQL committed them, deletes the row only if the version is still
the one it read: a change made meanwhile stays queued.

``op`` is ``upsert`` (send what changed) or ``delete``: remove everything the mirror holds of
the session, then send what the store holds of it now, whole (nothing, once forgotten). A
delete is never coalesced away: a session forgotten and recorded again before the push still
loses its earlier versions in the mirror.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import apsw

from postrun.store.db import Database

Op = Literal["upsert", "delete"]

_ENQUEUE = (
    "INSERT INTO mirror_outbox (session_id, op, version, queued_at) VALUES (?, ?, 1, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET version = version + 1,"
    " op = CASE WHEN mirror_outbox.op = 'upsert' THEN excluded.op ELSE mirror_outbox.op END"
)


def enqueue(connection: apsw.Connection, session_id: str, now: str, op: Op = "upsert") -> None:
    """Queue ``session_id`` for the mirror; call it inside the transaction that changed it."""
    connection.execute(_ENQUEUE, (session_id, op, now))


def queue_every_session(database: Database, now: str, database_id: str) -> int:
    """A mirror database this store has not pushed to yet gets the whole store; returns how
    many sessions were queued (those already waiting keep their place)."""
    with database.transaction() as connection:
        before = int(connection.execute("SELECT count(*) FROM mirror_outbox").get)
        connection.execute(
            "INSERT INTO mirror_outbox (session_id, op, version, queued_at)"
            " SELECT id, 'upsert', 1, ? FROM sessions WHERE true ON CONFLICT (session_id) DO NOTHING",
            (now,),
        )
        _set_state(connection, "database_id", database_id)
        return int(connection.execute("SELECT count(*) FROM mirror_outbox").get) - before


@dataclass(frozen=True, slots=True)
class Held:
    """What the store holds of its sessions, as of one moment, for comparing with the mirror."""

    sessions: Mapping[str, tuple[str, str]]  # id -> (updated_at, digest)
    waiting: frozenset[str]  # queued for the mirror (what the mirror holds of them is not final)
    forgotten: frozenset[str]  # tombstones: sessions the mirror must not hold


def held(database: Database) -> Held:
    connection = database.connection
    connection.execute("BEGIN DEFERRED")  # one snapshot: sessions, queue and tombstones agree
    try:
        sessions = {
            str(i): (str(u), str(d)) for i, u, d in connection.execute("SELECT id, updated_at, digest FROM sessions")
        }
        waiting = frozenset(str(row[0]) for row in connection.execute("SELECT session_id FROM mirror_outbox"))
        forgotten = frozenset(str(row[0]) for row in connection.execute("SELECT session_id FROM tombstones"))
    finally:
        connection.execute("COMMIT")
    return Held(sessions, waiting, forgotten)


def requeue(database: Database, now: str, *, send: Iterable[str] = (), purge: Iterable[str] = ()) -> None:
    """Queue sessions the mirror lacks (``send``) or must drop and get again whole (``purge``)."""
    with database.transaction() as connection:
        connection.executemany(_ENQUEUE, [(session_id, "upsert", now) for session_id in send])
        connection.executemany(_ENQUEUE, [(session_id, "delete", now) for session_id in purge])


def new_machine(connection: apsw.Connection) -> str | None:
    """Give the store at ``connection`` a new random machine id and forget which mirror it
    pushed to (a copy of a store on another machine must never touch the original's rows);
    returns the id, None for a store from before the mirror (it gets one when migrated)."""
    if connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'mirror_state'").get is None:
        return None
    with connection:
        connection.execute("DELETE FROM mirror_state WHERE key IN ('machine_id', 'database_id', 'last_push')")
        connection.execute("INSERT INTO mirror_state (key, value) VALUES ('machine_id', lower(hex(randomblob(16))))")
    return str(connection.execute("SELECT value FROM mirror_state WHERE key = 'machine_id'").get)


def machine_id(database: Database) -> str:
    return str(database.execute("SELECT value FROM mirror_state WHERE key = 'machine_id'").get)


def state(database: Database, key: str) -> str | None:
    value = database.execute("SELECT value FROM mirror_state WHERE key = ?", (key,)).get
    return None if value is None else str(value)


def _set_state(connection: apsw.Connection, key: str, value: str) -> None:
    connection.execute(
        "INSERT INTO mirror_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


@dataclass(frozen=True, slots=True)
class Backlog:
    sessions: int
    oldest: str | None  # when the longest-waiting session was queued


def backlog(database: Database) -> Backlog:
    count = int(database.execute("SELECT count(*) FROM mirror_outbox").get)
    oldest = database.execute("SELECT min(queued_at) FROM mirror_outbox").get
    return Backlog(count, None if oldest is None else str(oldest))


def waiting(database: Database, limit: int, skip: Collection[str] = ()) -> list[str]:
    """The sessions to push next, longest-waiting first, but those in ``skip`` (the server
    refused them in this push: they stay queued for the next)."""
    rows = database.execute(
        "SELECT session_id FROM mirror_outbox ORDER BY queued_at, session_id LIMIT ?", (limit + len(skip),)
    )
    return [session_id for (session_id,) in rows if session_id not in skip][:limit]


def mirrored_text(text: str) -> str:
    """A text (an id, say) as the mirror holds it: PostgreSQL's text cannot hold U+0000, so one
    an agent's file gave holds U+FFFD there (ids the mirror holds are compared in that form)."""
    return text.replace("\x00", "\ufffd")


@dataclass(frozen=True, slots=True)
class HistoryMark:
    """The mirror's last history entry of a session (``id`` 0: none), and how many it holds."""

    id: int
    count: int = 0
    digest: str = ""
    replaced_at: datetime | None = None


NO_HISTORY = HistoryMark(0)


@dataclass(frozen=True, slots=True)
class Known:
    """What the mirror already holds of one session: its steps' digests, its last history entry."""

    step_digests: Mapping[str, str]
    history: HistoryMark = NO_HISTORY

    @property
    def history_after(self) -> int:
        return self.history.id


@dataclass(frozen=True, slots=True)
class SessionRow:
    agent: str
    record: str
    digest: str
    started_at: str
    ended_at: str | None
    model: str | None
    provider: str | None
    agent_title: str | None
    agent_status: str | None
    git_branch: str | None
    captured_on: str
    ingested_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class Keyed:
    """A segment (key = index), actor or turn (key = id; ``index`` its position)."""

    key: str | int
    record: str
    digest: str
    index: int | None = None


@dataclass(frozen=True, slots=True)
class StepChange:
    id: str
    seq: int
    turn_id: str
    at: str
    record: str
    digest: str


@dataclass(frozen=True, slots=True)
class HistoryRow:
    id: int
    kind: str
    record_id: str
    record: str
    digest: str
    reason: str
    replaced_at: str


@dataclass(frozen=True, slots=True)
class Change:
    """One queued session as a push sends it. ``purge``: remove everything the mirror holds of
    it first (then ``session``, when not None, is sent whole)."""

    session_id: str
    version: int
    session: SessionRow | None
    purge: bool = False
    segments: tuple[Keyed, ...] = ()
    actors: tuple[Keyed, ...] = ()
    turns: tuple[Keyed, ...] = ()
    steps: tuple[StepChange, ...] = ()  # new or changed since what the mirror holds
    removed_steps: tuple[str, ...] = ()  # held by the mirror, gone from the store
    history: tuple[HistoryRow, ...] = ()  # newer than what the mirror holds


_SESSION_COLUMNS = (
    "agent, record, digest, started_at, ended_at, model, provider, cline_title, cline_status, git_branch,"
    " captured_on, ingested_at, updated_at"
)
_STEP_COLUMNS = "id, seq, turn_id, at, postrun_record(record), digest"  # the record as its JSON text


def read_changes(database: Database, session_ids: Sequence[str], known: Mapping[str, Known]) -> list[Change]:
    """The queued sessions' records, in one snapshot, minus what the mirror already holds."""
    changes: list[Change] = []
    connection = database.connection
    # One read transaction (records and versions from the same moment), deferred: it takes no
    # write lock, so the ingest writer never waits for it.
    connection.execute("BEGIN DEFERRED")
    try:
        for session_id in session_ids:
            queued = connection.execute(
                "SELECT op, version FROM mirror_outbox WHERE session_id = ?", (session_id,)
            ).fetchone()
            if queued is None:
                continue  # pushed meanwhile by another push
            op, version = queued
            row = connection.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            purge = op != "upsert"
            if row is None:
                changes.append(Change(session_id, int(version), None, purge=True))
                continue
            held = None if purge else known.get(session_id)  # purged: the mirror will hold nothing
            if held is not None and not _same_history(connection, session_id, held.history):
                purge, held = True, None  # the mirror's history is not this store's: sent again whole
            changes.append(_session_change(connection, session_id, int(version), SessionRow(*row), held, purge))
    finally:
        connection.execute("COMMIT")
    return changes


def _same_history(connection: apsw.Connection, session_id: str, mark: HistoryMark) -> bool:
    """Whether the store's history of the session, up to the mirror's last entry, is what the
    mirror holds. History only grows, so it is, unless the store was restored from an older
    backup: its history then goes on under ids the mirror's entries already use."""
    if mark.id == 0:
        return True
    count = int(
        connection.execute("SELECT count(*) FROM history WHERE session_id = ? AND id <= ?", (session_id, mark.id)).get
    )
    last = connection.execute(
        "SELECT digest, replaced_at FROM history WHERE session_id = ? AND id = ?", (session_id, mark.id)
    ).fetchone()
    return (
        count == mark.count
        and last is not None
        and str(last[0]) == mark.digest
        and datetime.fromisoformat(str(last[1])) == mark.replaced_at
    )


def _session_change(
    connection: apsw.Connection, session_id: str, version: int, session: SessionRow, known: Known | None, purge: bool
) -> Change:
    def keyed(sql: str) -> tuple[Keyed, ...]:
        return tuple(Keyed(*row) for row in connection.execute(sql, (session_id,)))

    held = known.step_digests if known is not None else {}
    if held:
        current = dict(connection.execute("SELECT id, digest FROM steps WHERE session_id = ?", (session_id,)))
        steps = tuple(
            StepChange(*row)
            for step_id, step_digest in current.items()
            if held.get(mirrored_text(step_id)) != step_digest
            for row in connection.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE session_id = ? AND id = ?", (session_id, step_id)
            )
        )
        stored = {mirrored_text(step_id) for step_id in current}
        removed = tuple(step_id for step_id in held if step_id not in stored)
    else:
        steps = tuple(
            StepChange(*row)
            for row in connection.execute(
                f"SELECT {_STEP_COLUMNS} FROM steps WHERE session_id = ? ORDER BY seq", (session_id,)
            )
        )
        removed = ()
    history = tuple(
        HistoryRow(*row)
        for row in connection.execute(
            "SELECT id, kind, record_id, record, digest, reason, replaced_at FROM history"
            " WHERE session_id = ? AND id > ? ORDER BY id",
            (session_id, known.history_after if known is not None else 0),
        )
    )
    return Change(
        session_id,
        version,
        session,
        purge=purge,
        segments=keyed("SELECT idx, record, digest FROM segments WHERE session_id = ? ORDER BY idx"),
        actors=keyed("SELECT id, record, digest FROM actors WHERE session_id = ? ORDER BY id"),
        turns=keyed("SELECT id, record, digest, idx FROM turns WHERE session_id = ? ORDER BY idx, id"),
        steps=steps,
        removed_steps=removed,
        history=history,
    )


def mark_pushed(database: Database, pushed: Iterable[tuple[str, int]], now: str) -> None:
    """After PostgreSQL committed: drop each (session, version) unless it changed meanwhile."""
    with database.transaction() as connection:
        connection.executemany("DELETE FROM mirror_outbox WHERE session_id = ? AND version = ?", list(pushed))
        _set_state(connection, "last_push", now)
