"""Is the mirror equal to the store? Session by session, record by record.

The store's side is each session's JSON export (``postrun.views.export_session``, what
``postrun export --format json`` prints; redacted, as the mirror is by default) plus its
history; the mirror's side is the same envelope rebuilt from PostgreSQL's rows of one machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import orjson
import psycopg

from postrun.review.redact import Redactor
from postrun.schema import SCHEMA_VERSION
from postrun.views import export_session


def machine_id(db: Path) -> str:
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return str(connection.execute("SELECT value FROM mirror_state WHERE key = 'machine_id'").get)
    finally:
        connection.close()


def _read(db: Path, sql: str, bindings: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    connection.set_busy_timeout(5000)
    try:
        return [tuple(row) for row in connection.execute(sql, bindings)]
    finally:
        connection.close()


def store_sessions(db: Path, *, redact: bool = True) -> dict[str, dict[str, Any]]:
    """Every stored session as its JSON export, and its history entries (``redact``: through
    the one redactor, secrets masked, paths kept: what the mirror holds by default)."""
    found = {}
    redactor = Redactor()
    for (session_id,) in _read(db, "SELECT id FROM sessions"):
        envelope = orjson.loads(export_session(db, session_id, "json", redact=redact).content)
        history = [
            (
                kind,
                record_id,
                redactor.value(orjson.loads(record), "") if redact else orjson.loads(record),
                record_digest,
                reason,
                replaced_at,
            )
            for kind, record_id, record, record_digest, reason, replaced_at in _read(
                db,
                "SELECT kind, record_id, record, digest, reason, replaced_at FROM history"
                " WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
        ]
        found[session_id] = {"envelope": envelope, "history": history}
    return found


def mirror_sessions(connection: psycopg.Connection[Any], machine: str) -> dict[str, dict[str, Any]]:
    """The same, rebuilt from the mirror's rows of ``machine``."""

    def rows(query: str) -> dict[str, list[tuple[Any, ...]]]:
        grouped: dict[str, list[tuple[Any, ...]]] = {}
        for session_id, *rest in connection.execute(query, (machine,)):
            grouped.setdefault(session_id, []).append(tuple(rest))
        return grouped

    sessions = {sid: record for sid, record in connection.execute(
        "SELECT session_id, record FROM postrun.sessions WHERE machine_id = %s", (machine,)
    )}  # fmt: skip
    segments = rows("SELECT session_id, idx, record FROM postrun.segments WHERE machine_id = %s")
    actors = rows("SELECT session_id, actor_id, record FROM postrun.actors WHERE machine_id = %s")
    turns = rows("SELECT session_id, idx, turn_id, record FROM postrun.turns WHERE machine_id = %s")
    steps = rows(
        "SELECT session_id, seq, record || jsonb_build_object('payload', payload) FROM postrun.steps"
        " WHERE machine_id = %s"
    )
    history = rows(
        "SELECT session_id, history_id, kind, record_id, record, digest, reason,"
        " to_char(replaced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        " FROM postrun.history WHERE machine_id = %s"
    )
    found = {}
    for session_id, record in sessions.items():
        session_steps = [step for _, step in sorted(steps.get(session_id, []), key=lambda row: row[0])]
        session_turns = [turn for _, _, turn in sorted(turns.get(session_id, []), key=lambda row: (row[0], row[1]))]
        for turn in session_turns:
            turn["step_ids"] = [step["id"] for step in session_steps if step["turn_id"] == turn["id"]]
        found[session_id] = {
            "envelope": {
                "schema_version": SCHEMA_VERSION,
                "session": record,
                "segments": [seg for _, seg in sorted(segments.get(session_id, []), key=lambda row: row[0])],
                # The root first, then by id: the export's order.
                "actors": [a for _, a in sorted(actors.get(session_id, []), key=lambda r: (r[0] != "root", r[0]))],
                "turns": session_turns,
                "steps": session_steps,
            },
            "history": [tuple(entry[1:]) for entry in sorted(history.get(session_id, []), key=lambda row: row[0])],
        }
    return found


def differences(db: Path, connection: psycopg.Connection[Any], limit: int = 5, *, redact: bool = True) -> list[str]:
    """What differs between the store at ``db`` and its machine's rows in the mirror."""
    expected = store_sessions(db, redact=redact)
    found = mirror_sessions(connection, machine_id(db))
    problems = [f"{sid}: missing from the mirror" for sid in sorted(expected.keys() - found.keys())]
    problems += [f"{sid}: in the mirror, not in the store" for sid in sorted(found.keys() - expected.keys())]
    for session_id in sorted(expected.keys() & found.keys()):
        mine, theirs = expected[session_id], found[session_id]
        for part in ("session", "segments", "actors", "turns", "steps"):
            if mine["envelope"][part] != theirs["envelope"][part]:
                problems.append(f"{session_id}: {part} differ")
        if mine["history"] != theirs["history"]:
            problems.append(f"{session_id}: history differs ({len(mine['history'])} vs {len(theirs['history'])})")
    return problems[:limit] + ([f"... and {len(problems) - limit} more"] if len(problems) > limit else [])
