"""Stores as earlier Postrun versions wrote them, for migration tests.

The rows are what the writer of that version put there: records as canonical JSON text,
and (up to version 2) a search index that keeps its own copy of each step's text.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import orjson

from postrun.records import MappedSession, canonical_json, digest
from postrun.store.codec import search_body
from postrun.store.migrations import MIGRATIONS

STAMP = "2026-11-29T12:00:00.000Z"


def write_old_store(path: Path, sessions: list[MappedSession], *, version: int, history: int = 0) -> None:
    """A store of schema ``version`` (1 or 2) holding ``sessions``, and ``history`` earlier
    versions of the first session's first step."""
    connection = apsw.Connection(str(path))
    with connection:
        for migration in MIGRATIONS[:version]:
            connection.execute(migration)
        connection.execute(f"pragma user_version={version}")
        for mapped in sessions:
            _write(connection, mapped)
        first = sessions[0].steps[0]
        for n in range(history):
            older = {**first.record, "payload": {**first.record["payload"], "text": f"earlier version {n}"}}
            blob = canonical_json(older).decode()
            connection.execute(
                "INSERT INTO history (session_id, kind, record_id, record, digest, reason, replaced_at)"
                " VALUES (?, 'step', ?, ?, ?, 'changed', ?)",
                (sessions[0].id, first.id, blob, f"digest-{n}", STAMP),
            )
    connection.close()


def _text_and_digest(record: object) -> tuple[str, str]:
    blob = canonical_json(record)
    return blob.decode(), digest(blob)


def _write(connection: apsw.Connection, mapped: MappedSession) -> None:
    session = mapped.session
    connection.execute(
        "INSERT INTO sessions (id, agent, record, digest, started_at, ended_at, model, provider, cline_title,"
        " cline_status, git_branch, approvals, source_files, captured_on, ingested_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL, ?, '[]', 'host', ?, ?)",
        (mapped.id, mapped.agent, *_text_and_digest(session), session["started_at"],
         orjson.dumps(mapped.approvals).decode(), STAMP, STAMP),
    )  # fmt: skip
    for segment in mapped.segments:
        connection.execute(
            "INSERT INTO segments VALUES (?, ?, ?, ?)", (mapped.id, segment["index"], *_text_and_digest(segment))
        )
    for actor in mapped.actors:
        connection.execute("INSERT INTO actors VALUES (?, ?, ?, ?)", (mapped.id, actor["id"], *_text_and_digest(actor)))
    for turn in mapped.turns:
        record = {k: v for k, v in turn.items() if k != "step_ids"}
        connection.execute(
            "INSERT INTO turns VALUES (?, ?, ?, ?, ?)",
            (mapped.id, turn["id"], turn["index"], *_text_and_digest(record)),
        )
    for row in mapped.steps:
        record = row.record
        rowid = connection.execute(
            "INSERT INTO steps (session_id, id, seq, turn_id, type, outcome, content_status, at, record, digest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rowid",
            (mapped.id, row.id, record["seq"], record["turn_id"], record["type"], record["outcome"],
             record["content_status"], record["at"], row.blob.decode(), row.digest),
        ).get  # fmt: skip
        connection.execute("INSERT INTO step_search (rowid, body) VALUES (?, ?)", (rowid, search_body(record)))
