"""A stored session rebuilt as the adapter's ``MappedSession``, from the stored records only.

Re-flagging under new rules goes through the normal upsert with it, so every step whose
flags change keeps its earlier version in ``history``; Cline's files are not read.
"""

from __future__ import annotations

import orjson

from postrun.records import MappedSession, SessionExtras, StepRow
from postrun.store import codec
from postrun.store.db import Database
from postrun.store.query import helper_metrics, load_envelope
from postrun.store.write import decode_source_files


def session_ids(database: Database) -> list[str]:
    return [str(session_id) for (session_id,) in database.execute("SELECT id FROM sessions ORDER BY started_at, id")]


def stored_mapped_session(database: Database, session_id: str) -> MappedSession:
    """A stored session as an adapter would hand it over, rebuilt from the stored records only."""
    envelope = load_envelope(database, session_id)
    row = database.execute(
        "SELECT agent, model, provider, cline_title, cline_status, git_branch, approvals, source_files"
        " FROM sessions WHERE id = ?",
        (session_id,),
    ).fetchone()
    assert row is not None  # load_envelope raised NotFound otherwise
    agent, model, provider, title, status, branch, approvals, source_files = row
    return MappedSession(
        agent=agent,
        session=envelope["session"],
        segments=envelope["segments"],
        actors=envelope["actors"],
        turns=envelope["turns"],
        steps=[
            StepRow.stored(codec.unpack(stored))
            for (stored,) in database.execute(
                "SELECT record FROM steps WHERE session_id = ? ORDER BY seq", (session_id,)
            )
        ],
        extras=SessionExtras(model, provider, title, status, branch),
        approvals=orjson.loads(approvals),
        source_files=decode_source_files(source_files),
        helper_metrics=helper_metrics(database, session_id),
    )
