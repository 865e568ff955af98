"""What the review app's pages read and write, each a short use of the store.

Every call opens the store for one request and closes it: read-only for the pages (a missing
store reads as empty), a writer for a verdict. SQL stays in ``postrun.store``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from postrun.store import browse
from postrun.store.db import Database, StoreMissing, reading
from postrun.store.query import (
    HistoryEntry,
    SessionDetails,
    history,
    load_envelope,
    no_session,
    resolve_session_id,
    session_details,
)
from postrun.store.verdicts import Verdict, record_verdict, verdict_history


@dataclass(frozen=True, slots=True)
class StoredSession:
    envelope: dict[str, Any]
    details: SessionDetails
    verdicts: list[Verdict]  # newest first
    history: list[HistoryEntry] | None


def _required(database: Database | None, reference: str, db: Path) -> Database:
    if database is None:
        raise no_session(reference, db)
    return database


def _workspaces(database: Database, index: browse.SessionIndex) -> list[str]:
    index.refresh(database)
    return index.workspaces()


def sessions_page(
    db: Path, query: browse.SessionFilter, index: browse.SessionIndex
) -> tuple[browse.SessionPage, list[str]]:
    """A page of sessions and every workspace (``index`` is refreshed, then read)."""
    with reading(db) as database:
        if database is None:
            return browse.SessionPage([], False), []
        roots = _workspaces(database, index)
        return browse.session_page(database, query, index), roots


def stored_session(db: Path, session_id: str, *, with_history: bool) -> StoredSession:
    with reading(db) as database:
        database = _required(database, session_id, db)
        session_id = resolve_session_id(database, session_id)
        return StoredSession(
            load_envelope(database, session_id),
            session_details(database, session_id),
            verdict_history(database, session_id),
            history(database, session_id) if with_history else None,
        )


def stored_step(db: Path, session_id: str, step_id: str) -> dict[str, Any]:
    with reading(db) as database:
        return browse.load_step(_required(database, session_id, db), session_id, step_id)


def save_verdict(db: Path, session_id: str, state: str, note: str, *, now: datetime) -> Verdict:
    """The one write of the review app: through a writer, which migrates an older store."""
    try:
        database = Database.open(db, create=False)
    except StoreMissing:
        raise no_session(session_id, db) from None
    with database:
        return record_verdict(database, session_id, state, note, now=now)


def edited_files(
    db: Path, workspace: str | None, index: browse.SessionIndex, *, since_utc: str | None
) -> tuple[list[browse.FileEdit], list[str]]:
    with reading(db) as database:
        if database is None:
            return [], []
        roots = _workspaces(database, index)
        if workspace is None:
            return [], roots
        return browse.file_edits(database, workspace, since_utc=since_utc), roots


def activity(
    db: Path, index: browse.SessionIndex, *, since_utc: str, until_utc: str, workspace: str | None
) -> tuple[list[browse.DayActivity], list[str]]:
    with reading(db) as database:
        if database is None:
            return [], []
        found = browse.activity(database, since_utc=since_utc, until_utc=until_utc, workspace=workspace)
        return found, _workspaces(database, index)


def change_marker(db: Path, session_id: str | None) -> str:
    with reading(db) as database:
        return "" if database is None else browse.change_marker(database, session_id)
