"""Reading the store for people and programs: ``sessions``, ``show``, ``export``, ``search``, ``status``.

Each function opens the store for one read and closes it. A store that does not exist
yet reads as empty: listing it creates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson

from postrun import render
from postrun.capture.lock import CaptureInfo, read_capture_info
from postrun.errors import PostrunError
from postrun.schema import SchemaError, validate_envelope
from postrun.store import vault
from postrun.store.db import Database, StoreMissing
from postrun.store.query import (
    SearchHit,
    SessionSummary,
    StoreCounts,
    counts,
    history,
    list_sessions,
    load_envelope,
    no_session,
    resolve_session_id,
    search,
    search_query,
    session_details,
)
from postrun.store.verdicts import Verdict, check_verdict_filter, current_verdicts


@dataclass(frozen=True, slots=True)
class CaptureStatus:
    """``postrun status``: who holds the capture lock (None: not running) and what is stored."""

    capture: CaptureInfo | None
    stored: StoreCounts | None  # None: no store yet


ExportFormat = Literal["json", "jsonl", "markdown"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("json", "jsonl", "markdown")


@contextmanager
def _reading(db: Path) -> Iterator[Database | None]:
    try:
        database = Database.open(db, create=False)
    except StoreMissing:
        yield None
        return
    try:
        yield database
    finally:
        database.close()


def kept_raw_versions(db: Path, session_ids: Iterable[str]) -> dict[str, list[dict[str, object]]]:
    """For ``sessions --json``: which raw versions the vault keeps of each session."""
    with _reading(db) as database:
        if database is None:
            return {}
        return {
            session_id: [v.as_json() for v in vault.kept_versions(database, session_id)] for session_id in session_ids
        }


def reviewed_sessions(
    db: Path, *, agent: str | None = None, limit: int | None = None, verdict: str | None = None
) -> list[tuple[SessionSummary, Verdict | None]]:
    """Stored sessions (newest first) with their current review verdict; ``verdict`` keeps only
    the sessions with that verdict (``unreviewed``: none yet)."""
    check_verdict_filter(verdict)
    with _reading(db) as database:
        if database is None:
            return []
        summaries = list_sessions(database, agent=agent, limit=None if verdict else limit)
        verdicts = current_verdicts(database, [summary.id for summary in summaries])
    pairs = [(summary, verdicts.get(summary.id)) for summary in summaries]
    if verdict is not None:
        pairs = [pair for pair in pairs if (pair[1].state if pair[1] else "unreviewed") == verdict]
    return pairs[:limit] if limit is not None else pairs


def show_session(db: Path, reference: str, *, with_history: bool = False) -> str:
    """The ``postrun show`` timeline of the session ``reference`` names (an id or unique prefix)."""
    with _reading(db) as database:
        if database is None:
            raise no_session(reference, db)
        session_id = resolve_session_id(database, reference)
        envelope = load_envelope(database, session_id)
        details = session_details(database, session_id)
        entries = history(database, session_id) if with_history else None
        kept = vault.kept_versions(database, session_id) if with_history else None
    lines = render.timeline(envelope, details, entries) + (render.raw_versions(kept) if kept is not None else [])
    return "\n".join(lines) + "\n"


def export_session(db: Path, reference: str, export_format: ExportFormat) -> bytes:
    """The session ``reference`` names as the v1.2 envelope (json), JSON lines or Markdown."""
    with _reading(db) as database:
        if database is None:
            raise no_session(reference, db)
        session_id = resolve_session_id(database, reference)
        envelope = load_envelope(database, session_id)
        details = session_details(database, session_id) if export_format == "markdown" else None
    try:
        validate_envelope(envelope)
    except SchemaError as exc:
        # A store written by this Postrun always holds valid records; say so loudly if not.
        raise PostrunError(
            f"session {session_id}", f"stored records break the v1.2 schema: {exc.problems[0]}"
        ) from None
    if export_format == "json":
        return orjson.dumps(envelope, option=orjson.OPT_INDENT_2) + b"\n"
    if export_format == "jsonl":
        lines = [orjson.dumps({"record": "session", "data": envelope["session"]})]
        for kind, key in (("segment", "segments"), ("actor", "actors"), ("turn", "turns"), ("step", "steps")):
            lines += [orjson.dumps({"record": kind, "data": record}) for record in envelope[key]]
        return b"\n".join(lines) + b"\n"
    assert details is not None
    return render.markdown(envelope, details).encode()


def search_steps(
    db: Path,
    text: str,
    *,
    step_type: str | None = None,
    failed: bool = False,
    since: str | None = None,
    limit: int = 50,
    window: int | None = None,
) -> list[SearchHit]:
    """``postrun search``: steps matching every word of ``text`` (``window``: ranked among the
    newest that many matches only); the arguments are checked (UsageError) before the store is opened."""
    query = search_query(text, step_type=step_type, failed=failed, since=since)
    with _reading(db) as database:
        return [] if database is None else search(database, query, limit=limit, window=window)


def capture_status(db: Path, capture_lock: Path) -> CaptureStatus:
    with _reading(db) as database:
        stored = None if database is None else counts(database)
    return CaptureStatus(read_capture_info(capture_lock), stored)
