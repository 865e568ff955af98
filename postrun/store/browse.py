"""Reads for the review app: a filtered page of sessions, one step, change markers.

Every query reads one page's worth: filters run in SQL over indexed columns (the failed and
flagged filters over partial indexes), per-session figures only for the rows shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from postrun.errors import NotFound
from postrun.store import codec
from postrun.store.db import Database
from postrun.store.flags import SEVERITY_ORDER, strongest
from postrun.store.session_filter import DANGER_IDS, NEEDS_REVIEW_SQL, SessionFilter, where_clause
from postrun.store.session_index import SessionIndex
from postrun.store.titles import TITLE_SQL
from postrun.store.verdicts import Verdict, current_verdicts

PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class FlagCount:
    """The steps of a session flagged with one kind, and the strongest severity among them."""

    kind: str
    severity: str
    steps: int


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
    needs_review: bool = False  # unreviewed, with a danger flag, a failed command or a rejected step
    flags: tuple[FlagCount, ...] = ()  # strongest first
    first_flagged: int | None = None  # the seq of its first flagged step

    @property
    def open(self) -> bool:
        return self.ended_utc is None


@dataclass(frozen=True, slots=True)
class SessionPage:
    rows: list[SessionRow]
    has_more: bool
    total: int = 0  # sessions matching the filter, on every page

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // PAGE_SIZE))


def session_page(database: Database, query: SessionFilter, index: SessionIndex | None = None) -> SessionPage:
    """One page of sessions matching ``query``: newest first, or (``order="review"``) those that
    need review first, the ones with a danger flag before the others (``index``: one kept
    between calls)."""
    matching = None
    if query.text:
        if index is None:
            index = SessionIndex()
            index.refresh(database)
        matching = index.matching(query.text)
    where, params = where_clause(query, matching)
    total = int(database.execute(f"SELECT count(*) FROM sessions s{where}", params).get)
    offset = (max(query.page, 1) - 1) * PAGE_SIZE
    found = _page_ids(database, query, where, params, offset)
    shown = found[:PAGE_SIZE]
    figures: dict[str, Any] = {
        row[0]: row
        for row in database.execute(
            f"""
            SELECT s.id, s.agent, s.record, s.started_at, s.ended_at, s.updated_at,
                   (SELECT count(*) FROM steps st WHERE st.session_id = s.id),
                   (SELECT count(*) FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed'),
                   (SELECT count(DISTINCT f.step_id) FROM step_flags f WHERE f.session_id = s.id),
                   {NEEDS_REVIEW_SQL},
                   {TITLE_SQL}
              FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))
            """,
            (orjson.dumps(shown).decode(),),
        )
    }
    verdicts = current_verdicts(database, shown)
    flags, firsts = _flag_counts(database, shown)
    rows = []
    for session_id in shown:
        _, agent, record_text, started, ended, updated, steps, failed, flagged, needs, title = figures[session_id]
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
                needs_review=bool(needs),
                flags=tuple(flags.get(session_id, ())),
                first_flagged=firsts.get(session_id),
            )
        )
    return SessionPage(rows, len(found) > PAGE_SIZE, total)


def _page_ids(database: Database, query: SessionFilter, where: str, params: list[Any], offset: int) -> list[str]:
    """The ids of the page at ``offset`` (and one more, to tell whether a page follows).

    In review order, the sessions that need review (few) come first, sorted; the others
    follow newest first, read from the start-time index only as far as the page goes.
    """
    limit = PAGE_SIZE + 1

    def ids(sql: str, bindings: tuple[Any, ...]) -> list[str]:
        return [str(row[0]) for row in database.execute(sql, bindings)]

    if query.order != "review":
        return ids(f"SELECT s.id FROM sessions s{where} ORDER BY s.started_at DESC, s.id LIMIT ? OFFSET ?",
                   (*params, limit, offset))  # fmt: skip
    joined = f"{where} AND" if where else " WHERE"
    first = ids(
        f"SELECT s.id FROM sessions s{joined} {NEEDS_REVIEW_SQL}"
        f" ORDER BY s.id IN ({DANGER_IDS}) DESC, s.started_at DESC, s.id",
        tuple(params),
    )
    found = first[offset : offset + limit]
    if len(found) == limit:
        return found
    return found + ids(
        f"SELECT s.id FROM sessions s{joined} NOT {NEEDS_REVIEW_SQL} ORDER BY s.started_at DESC, s.id LIMIT ? OFFSET ?",
        (*params, limit - len(found), max(0, offset - len(first))),
    )


def _flag_counts(database: Database, session_ids: list[str]) -> tuple[dict[str, list[FlagCount]], dict[str, int]]:
    """Each session's flag kinds (strongest first) and the seq of its first flagged step."""
    ids = orjson.dumps(session_ids).decode()
    counts: dict[str, list[FlagCount]] = {}
    for session_id, kind, severities, steps in database.execute(
        "SELECT session_id, kind, group_concat(DISTINCT severity), count(*) FROM step_flags"
        " WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id, kind",
        (ids,),
    ):
        counts.setdefault(session_id, []).append(FlagCount(kind, strongest(str(severities).split(",")), steps))
    for found in counts.values():
        found.sort(key=lambda count: (-SEVERITY_ORDER.get(count.severity, 0), count.kind))
    firsts = {
        str(session_id): int(seq)
        for session_id, seq in database.execute(
            "SELECT f.session_id, min(st.seq) FROM step_flags f"
            " JOIN steps st ON st.session_id = f.session_id AND st.id = f.step_id"
            " WHERE f.session_id IN (SELECT value FROM json_each(?)) GROUP BY f.session_id",
            (ids,),
        )
    }
    return counts, firsts


def load_step(database: Database, session_id: str, step_id: str) -> dict[str, Any]:
    row = database.execute("SELECT record FROM steps WHERE session_id = ? AND id = ?", (session_id, step_id)).fetchone()
    if row is None:
        raise NotFound("", f"no step {step_id} in session {session_id}")
    record: dict[str, Any] = codec.load(row[0])
    return record


def change_marker(database: Database, session_id: str | None = None) -> str:
    """A value that changes whenever the sessions (or ``session_id``) or any verdict change."""
    verdicts = database.execute("SELECT coalesce(max(id), 0) FROM verdicts").get
    if session_id is None:
        latest, count = database.execute("SELECT max(updated_at), count(*) FROM sessions").fetchall()[0]
        return f"{latest}|{count}|{verdicts}"
    updated = database.execute("SELECT updated_at FROM sessions WHERE id = ?", (session_id,)).get
    return f"{updated}|{verdicts}"
