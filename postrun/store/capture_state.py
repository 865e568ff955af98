"""What the capture service reads from the store: every session's fingerprints and open state.

One query at start-up (and after the store was recreated) lets the capture skip, without
reading them, the sessions whose files have not changed since they were stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from postrun.records import SourceFile
from postrun.store.db import Database
from postrun.store.ingest import decode_source_files


@dataclass(frozen=True, slots=True)
class StoredFingerprints:
    session_id: str
    source_files: tuple[SourceFile, ...]
    open: bool  # no end time yet


def iter_stored_fingerprints(database: Database, agent: str) -> Iterator[StoredFingerprints]:
    """Every stored session of ``agent``, streamed (a long history is never all in memory)."""
    cursor = database.execute(
        "SELECT id, source_files, ended_at IS NULL FROM sessions WHERE agent = ?",
        (agent,),
    )
    for session_id, source_files, is_open in cursor:
        yield StoredFingerprints(str(session_id), decode_source_files(source_files), bool(is_open))


def session_is_open(database: Database, session_id: str) -> bool | None:
    """Whether the stored session has no end time yet; None when it is not stored."""
    row = database.execute("SELECT ended_at IS NULL FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else bool(row[0])
