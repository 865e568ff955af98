"""One batch written into PostgreSQL: what the mirror already holds, and the writes.

Every write is an upsert by the record's key that skips an unchanged digest, so a batch
applied twice changes nothing; a purged session (a forget, a session held otherwise) is
deleted first, its rows with it (ON DELETE CASCADE), then sent whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from postrun.mirror.bounded import bounded, limit
from postrun.mirror.rows import Origin, Scrub, history_values, keyed_values, pg_key, session_values, step_values
from postrun.store.outbox import NO_HISTORY, Change, HistoryMark, Keyed, Known

Connection = psycopg.Connection[tuple[Any, ...]]


def known(connection: Connection, machine_id: str, session_ids: Sequence[str]) -> dict[str, Known]:
    with bounded(connection):
        return _known(connection, machine_id, session_ids)


def _known(connection: Connection, machine_id: str, session_ids: Sequence[str]) -> dict[str, Known]:
    digests: dict[str, dict[str, str]] = {}
    for session_id, step_id, step_digest in connection.execute(
        "SELECT session_id, step_id, digest FROM postrun.steps WHERE machine_id = %s AND session_id = ANY(%s)",
        (machine_id, list(session_ids)),
    ):
        digests.setdefault(session_id, {})[step_id] = step_digest
    # Each session's last history entry and how many it holds: what the store's must match.
    last: dict[str, HistoryMark] = {
        session_id: HistoryMark(int(history_id), int(count), str(history_digest), replaced_at)
        for session_id, history_id, count, history_digest, replaced_at in connection.execute(
            "SELECT DISTINCT ON (session_id) session_id, history_id, count(*) OVER (PARTITION BY session_id),"
            " digest, replaced_at FROM postrun.history"
            " WHERE machine_id = %s AND session_id = ANY(%s) ORDER BY session_id, history_id DESC",
            (machine_id, list(session_ids)),
        )
    }
    return {
        session_id: Known(digests.get(session_id, {}), last.get(session_id, NO_HISTORY))
        for session_id in set(digests) | set(last)
    }


_ORIGIN = "machine_id, host, os_user, session_id"
_SESSION_UPSERT = f"""
INSERT INTO postrun.sessions ({_ORIGIN}, agent, started_at, ended_at, workspace, model, provider, agent_title,
    agent_status, git_branch, cost_usd, record, digest, captured_on, ingested_at, updated_at, redaction, mirrored_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, clock_timestamp())
ON CONFLICT (machine_id, session_id) DO UPDATE SET host = excluded.host, os_user = excluded.os_user,
    agent = excluded.agent, started_at = excluded.started_at, ended_at = excluded.ended_at,
    workspace = excluded.workspace, model = excluded.model, provider = excluded.provider,
    agent_title = excluded.agent_title, agent_status = excluded.agent_status, git_branch = excluded.git_branch,
    cost_usd = excluded.cost_usd, record = excluded.record, digest = excluded.digest,
    captured_on = excluded.captured_on, ingested_at = excluded.ingested_at, updated_at = excluded.updated_at,
    redaction = excluded.redaction, mirrored_at = excluded.mirrored_at
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


def apply(connection: Connection, origin: Origin, changes: Sequence[Change], scrub: Scrub) -> int:
    """Write ``changes`` (inside the caller's transaction), each record through ``scrub``;
    returns how many steps were sent."""
    limit(connection)
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
            [session_values(origin, c.session_id, c.session, scrub) for c in kept if c.session is not None],
        )
        for table, key, indexed in _KEYED_TABLES:
            _sync_keyed(cursor, origin, kept, table, key, indexed, scrub)
        stale = [(machine, c.session_id, list(c.removed_steps)) for c in kept if c.removed_steps]
        if stale:
            cursor.executemany(
                "DELETE FROM postrun.steps WHERE machine_id = %s AND session_id = %s AND step_id = ANY(%s)", stale
            )
        steps = [step_values(origin, c.session_id, step, scrub) for c in kept for step in c.steps]
        if steps:
            cursor.executemany(_STEP_UPSERT, steps)
        history = [history_values(origin, c.session_id, entry, scrub) for c in kept for entry in c.history]
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
    scrub: Scrub,
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
        [(origin.machine_id, session_id, [pg_key(r.key) for r in rows]) for session_id, rows in records.items()],
    )
    values = [keyed_values(origin, session_id, r, table, scrub) for session_id, rows in records.items() for r in rows]
    if values:
        cursor.executemany(upsert, values)
