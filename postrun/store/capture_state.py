"""What the capture reads from the store: a session's stored fingerprints and open state.

At start-up (and after the store was recreated) they let the capture skip, without reading
them, the sessions whose files have not changed since they were stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from postrun.records import SourceFile
from postrun.store.db import Database
from postrun.store.write import decode_source_files


@dataclass(frozen=True, slots=True)
class StoredFingerprints:
    session_id: str
    source_files: tuple[SourceFile, ...]
    open: bool  # no end time yet


def stored_fingerprints(database: Database, session_id: str) -> StoredFingerprints | None:
    """The fingerprints the session was last stored with, and whether it is open; None if not stored.

    One indexed lookup per session keeps the start-up comparison of a long history flat in
    memory (nothing is loaded for all sessions at once).
    """
    row = database.execute("SELECT source_files, ended_at IS NULL FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    return StoredFingerprints(session_id, decode_source_files(row[0]), bool(row[1]))
