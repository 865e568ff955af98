"""Reads for the review app: a filtered page of sessions, one step, edited files, activity, change markers.

Every query reads one page's worth: filters run in SQL over indexed columns (the failed and
flagged filters over partial indexes), per-session figures only for the rows shown.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson

from postrun.errors import NotFound
from postrun.store import codec
from postrun.store.db import Database
from postrun.store.titles import TITLE_SQL
from postrun.store.verdicts import Verdict, current_verdicts
from postrun.timestamps import utc_iso

PAGE_SIZE = 50
_STAMP_SLACK = timedelta(minutes=1)  # far beyond the store's busy timeout
_LATEST_VERDICT = "(SELECT v.state FROM verdicts v WHERE v.session_id = s.id ORDER BY v.id DESC LIMIT 1)"


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """What the sessions page shows; every field narrows the list."""

    text: str | None = None  # in the title, workspace or id (case-insensitive)
    workspace: str | None = None
    state: str | None = None  # open | ended
    failed: bool = False
    flagged: bool = False
    since_utc: str | None = None  # started at or after
    until_utc: str | None = None  # started before
    verdict: str | None = None  # a verdict state, or "unreviewed"
    page: int = 1


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    agent: str
    title: str
    workspace: str
    started_utc: str
    ended_utc: str | None
    updated_at: str
    steps: int
    failed_steps: int
    flagged_steps: int
    cost_usd: float | None
    verdict: Verdict | None

    @property
    def open(self) -> bool:
        return self.ended_utc is None


@dataclass(frozen=True, slots=True)
class SessionPage:
    rows: list[SessionRow]
    has_more: bool


def _where(query: SessionFilter, matching: list[str] | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if query.workspace is not None:
        clauses.append("json_extract(s.record, '$.workspace.root') = ?")
        params.append(query.workspace)
    if query.state == "open":
        clauses.append("s.ended_at IS NULL")
    elif query.state == "ended":
        clauses.append("s.ended_at IS NOT NULL")
    if query.failed:
        clauses.append("EXISTS (SELECT 1 FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed')")
    if query.flagged:
        clauses.append("EXISTS (SELECT 1 FROM step_flags f WHERE f.session_id = s.id)")
    if query.since_utc is not None:
        clauses.append("s.started_at >= ?")
        params.append(query.since_utc)
    if query.until_utc is not None:
        clauses.append("s.started_at < ?")
        params.append(query.until_utc)
    if query.verdict == "unreviewed":
        clauses.append("NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.session_id = s.id)")
    elif query.verdict is not None:
        clauses.append(f"{_LATEST_VERDICT} = ?")
        params.append(query.verdict)
    if matching is not None:
        clauses.append("s.id IN (SELECT value FROM json_each(?))")
        params.append(orjson.dumps(matching).decode())
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class SessionIndex:
    """Each session's workspace, and its id, workspace and title in lower case (the text filter).

    Finding a title needs the session's first prompt, a workspace the session's record:
    reading them for every session on every request is too slow for a big store, so the
    index keeps them and each refresh reads only the sessions changed since the last one.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._workspaces: dict[str, str] = {}
        self._updated: dict[str, str] = {}
        self._seen = ""
        self._lock = threading.Lock()

    def refresh(self, database: Database) -> None:
        with self._lock:
            since = self._seen
        if since:
            # Writers stamp updated_at before they wait for the write lock: one may commit a
            # stamp a little older than one already seen.
            since = utc_iso(datetime.fromisoformat(since.replace("Z", "+00:00")) - _STAMP_SLACK)
        stamps: list[Any] = database.execute(
            "SELECT id, updated_at FROM sessions WHERE updated_at >= ?", (since,)
        ).fetchall()
        with self._lock:
            changed = [session_id for session_id, updated in stamps if self._updated.get(session_id) != updated]
        if not changed:
            return
        rows: list[Any] = database.execute(
            f"SELECT s.id, s.updated_at, coalesce(json_extract(s.record, '$.workspace.root'), ''), {TITLE_SQL}"
            " FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(changed).decode(),),
        ).fetchall()
        with self._lock:
            for session_id, updated, workspace, title in rows:
                self._texts[session_id] = f"{session_id} {workspace} {title}".lower()
                self._workspaces[session_id] = workspace
                self._updated[session_id] = updated
                self._seen = max(self._seen, updated)

    def workspaces(self) -> list[str]:
        """Every workspace root of an indexed session, by name."""
        with self._lock:
            return sorted({root for root in self._workspaces.values() if root})

    def matching(self, text: str) -> list[str]:
        needle = text.lower()
        with self._lock:
            return [session_id for session_id, haystack in self._texts.items() if needle in haystack]


def session_page(database: Database, query: SessionFilter, index: SessionIndex | None = None) -> SessionPage:
    """One page of sessions matching ``query``, newest first (``index``: one kept between calls)."""
    matching = None
    if query.text:
        if index is None:
            index = SessionIndex()
            index.refresh(database)
        matching = index.matching(query.text)
    where, params = _where(query, matching)
    sql = f"""
        SELECT s.id, s.agent, s.record, s.started_at, s.ended_at, s.updated_at,
               (SELECT count(*) FROM steps st WHERE st.session_id = s.id),
               (SELECT count(*) FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed'),
               (SELECT count(DISTINCT f.step_id) FROM step_flags f WHERE f.session_id = s.id),
               {TITLE_SQL}
          FROM sessions s{where}
         ORDER BY s.started_at DESC, s.id
         LIMIT ? OFFSET ?
    """
    offset = (max(query.page, 1) - 1) * PAGE_SIZE
    found: list[Any] = database.execute(sql, (*params, PAGE_SIZE + 1, offset)).fetchall()
    verdicts = current_verdicts(database, [row[0] for row in found[:PAGE_SIZE]])
    rows = []
    for session_id, agent, record_text, started, ended, updated, steps, failed, flagged, title in found[:PAGE_SIZE]:
        record = orjson.loads(record_text)
        metrics = record.get("metrics")
        rows.append(
            SessionRow(
                id=session_id,
                agent=agent,
                title=title,
                workspace=record["workspace"]["root"],
                started_utc=started,
                ended_utc=ended,
                updated_at=updated,
                steps=steps,
                failed_steps=failed,
                flagged_steps=flagged,
                cost_usd=None if metrics is None else float(metrics["cost_usd"]),
                verdict=verdicts.get(session_id),
            )
        )
    return SessionPage(rows, len(found) > PAGE_SIZE)


def load_step(database: Database, session_id: str, step_id: str) -> dict[str, Any]:
    row = database.execute("SELECT record FROM steps WHERE session_id = ? AND id = ?", (session_id, step_id)).fetchone()
    if row is None:
        raise NotFound("", f"no step {step_id} in session {session_id}")
    record: dict[str, Any] = codec.load(row[0])
    return record


@dataclass(frozen=True, slots=True)
class FileEdit:
    session_id: str
    session_title: str
    step: dict[str, Any]


def file_edits(database: Database, workspace: str, *, since_utc: str | None, limit: int = 500) -> list[FileEdit]:
    """Edit steps of ``workspace``'s sessions, newest first."""
    rows = database.execute(
        f"""
        SELECT st.session_id, {TITLE_SQL}, st.record
          FROM sessions s JOIN steps st ON st.session_id = s.id
         WHERE json_extract(s.record, '$.workspace.root') = ?1 AND st.type = 'edit'
           AND (?2 IS NULL OR st.at >= ?2)
         ORDER BY st.at DESC, st.seq DESC
         LIMIT ?3
        """,
        (workspace, since_utc, limit),
    )
    return [FileEdit(session_id, title, codec.load(record)) for session_id, title, record in rows]


@dataclass(frozen=True, slots=True)
class DayActivity:
    day: str  # YYYY-MM-DD (UTC), the day the sessions started
    sessions: int
    steps: int
    failed_steps: int
    cost_usd: float


def activity(database: Database, *, since_utc: str, until_utc: str, workspace: str | None) -> list[DayActivity]:
    """Sessions, their steps, failed steps and cost, by the (UTC) day the sessions started."""
    rows = database.execute(
        """
        SELECT substr(s.started_at, 1, 10) AS day, count(*),
               sum((SELECT count(*) FROM steps st WHERE st.session_id = s.id)),
               sum((SELECT count(*) FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed')),
               total(json_extract(s.record, '$.metrics.cost_usd'))
          FROM sessions s
         WHERE s.started_at >= ?1 AND s.started_at < ?2
           AND (?3 IS NULL OR json_extract(s.record, '$.workspace.root') = ?3)
         GROUP BY day ORDER BY day
        """,
        (since_utc, until_utc, workspace),
    )
    return [DayActivity(day, sessions, steps, failed, cost) for day, sessions, steps, failed, cost in rows]


def change_marker(database: Database, session_id: str | None = None) -> str:
    """A value that changes whenever the sessions (or ``session_id``) or any verdict change."""
    verdicts = database.execute("SELECT coalesce(max(id), 0) FROM verdicts").get
    if session_id is None:
        latest, count = database.execute("SELECT max(updated_at), count(*) FROM sessions").fetchall()[0]
        return f"{latest}|{count}|{verdicts}"
    updated = database.execute("SELECT updated_at FROM sessions WHERE id = ?", (session_id,)).get
    return f"{updated}|{verdicts}"
