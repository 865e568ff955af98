"""Reads over a span of days: the files edited in a workspace, and activity per day.

Both are bounded by the caller's range; edits come a page at a time, newest first, through
the partial index of edit steps by time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from postrun.store import codec
from postrun.store.db import Database
from postrun.store.titles import TITLE_SQL

EDITS_PAGE = 500


@dataclass(frozen=True, slots=True)
class FileEdit:
    session_id: str
    session_title: str
    step: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FileEdits:
    edits: list[FileEdit]  # this page's, newest first
    total: int  # every edit of the workspace in the range
    first: int  # the position of this page's first edit among them (0-based)


_EDITS_WHERE = """
      FROM steps st JOIN sessions s ON s.id = st.session_id
     WHERE st.type = 'edit' AND st.at >= ?1 AND json_extract(s.record, '$.workspace.root') = ?2
"""


def file_edits(
    database: Database, workspace: str, *, since_utc: str, page: int = 1, per_page: int = EDITS_PAGE
) -> FileEdits:
    """Edit steps of ``workspace``'s sessions since ``since_utc``, newest first, a page at a time."""
    total = int(database.execute(f"SELECT count(*) {_EDITS_WHERE}", (since_utc, workspace)).get)
    first = (max(page, 1) - 1) * per_page
    rows: list[Any] = database.execute(
        f"SELECT st.session_id, st.record {_EDITS_WHERE} ORDER BY st.at DESC, st.seq DESC LIMIT ?3 OFFSET ?4",
        (since_utc, workspace, per_page, first),
    ).fetchall()
    titles = dict(
        database.execute(
            f"SELECT s.id, {TITLE_SQL} FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(sorted({session_id for session_id, _ in rows})).decode(),),
        )
    )
    edits = [FileEdit(session_id, str(titles.get(session_id, "")), codec.load(record)) for session_id, record in rows]
    return FileEdits(edits, total, first)


@dataclass(frozen=True, slots=True)
class DayActivity:
    day: str  # YYYY-MM-DD (UTC), the day the sessions started
    sessions: int
    steps: int
    failed_steps: int
    cost_usd: float


def activity(database: Database, *, since_utc: str, until_utc: str | None, workspace: str | None) -> list[DayActivity]:
    """Sessions, their steps, failed steps and cost, by the (UTC) day the sessions started
    (``until_utc``: before then; None: no end)."""
    rows = database.execute(
        """
        SELECT substr(s.started_at, 1, 10) AS day, count(*),
               sum((SELECT count(*) FROM steps st WHERE st.session_id = s.id)),
               sum((SELECT count(*) FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed')),
               total(json_extract(s.record, '$.metrics.cost_usd'))
          FROM sessions s
         WHERE s.started_at >= ?1 AND (?2 IS NULL OR s.started_at < ?2)
           AND (?3 IS NULL OR json_extract(s.record, '$.workspace.root') = ?3)
         GROUP BY day ORDER BY day
        """,
        (since_utc, until_utc, workspace),
    )
    return [DayActivity(day, sessions, steps, failed, cost) for day, sessions, steps, failed, cost in rows]
