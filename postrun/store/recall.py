"""Reads for recall (``postrun mcp``): found steps under session filters, the sessions active
lately, steps whose text names a file, a session's turns, counts and actors, a run of steps.

Every function reads a bounded amount: a limit on rows, or an iterator the caller stops.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import orjson

from postrun.store import codec
from postrun.store.db import Database
from postrun.store.search import SearchQuery


@dataclass(frozen=True, slots=True)
class Scope:
    """Which sessions' steps count: an agent kind, a workspace root, ids left out."""

    agent: str | None = None
    workspace: str | None = None
    exclude: tuple[str, ...] = ()
    outcome: str | None = None  # ok | failed
    since_utc: str | None = None  # steps at or after


@dataclass(frozen=True, slots=True)
class FoundStep:
    session_id: str
    step_id: str
    seq: int
    at: str  # UTC
    type: str
    outcome: str
    agent: str
    workspace: str
    record: dict[str, Any] = field(repr=False)


_FOUND_COLUMNS = (
    "st.session_id, st.id, st.seq, st.at, st.type, st.outcome, s.agent,"
    " coalesce(json_extract(s.record, '$.workspace.root'), ''), st.record"
)
_STEP_SCOPE = """
       AND (:outcome IS NULL OR st.outcome = :outcome)
       AND (:since IS NULL OR st.at >= :since)
       AND st.session_id NOT IN (SELECT value FROM json_each(:exclude))
"""
_SESSION_SCOPE = """
       AND (:agent IS NULL OR s.agent = :agent)
       AND (:workspace IS NULL OR json_extract(s.record, '$.workspace.root') = :workspace)
"""
_FLAG_SQL = """
       AND (:flag IS NULL OR EXISTS (SELECT 1 FROM step_flags f WHERE f.session_id = st.session_id
                                        AND f.step_id = st.id AND (:flag = 'any' OR f.kind = :flag)))
"""


def _matching(scope: Scope, *, sessions: bool = False) -> str:
    """FROM … WHERE for the steps matching ``:match`` in ``scope``; the sessions are joined when a
    filter (or the caller, ``sessions``) needs them: a lookup per match is most of a common word's cost."""
    sessions = sessions or scope.agent is not None or scope.workspace is not None
    joined = " JOIN sessions s ON s.id = st.session_id" if sessions else ""
    return (
        f"FROM step_search JOIN steps st ON st.rowid = step_search.rowid{joined}"
        f" WHERE step_search MATCH :match {_STEP_SCOPE} {_SESSION_SCOPE if sessions else ''}"
    )


def _bindings(scope: Scope, **more: Any) -> dict[str, Any]:
    return {
        "outcome": scope.outcome,
        "since": scope.since_utc,
        "agent": scope.agent,
        "workspace": scope.workspace,
        "exclude": orjson.dumps(list(scope.exclude)).decode(),
        **more,
    }


def _found(row: tuple[Any, ...]) -> FoundStep:
    session_id, step_id, seq, at, kind, outcome, agent, workspace, record = row
    return FoundStep(session_id, step_id, seq, at, kind, outcome, agent, workspace, codec.load(record))


def found_steps(
    database: Database, query: SearchQuery, scope: Scope, *, limit: int, window: int, older: int
) -> list[FoundStep]:
    """Up to ``limit`` steps matching ``query`` in ``scope``: the best among the newest ``window``
    matches (ranking every match of a common word is slow), then, when they are fewer than
    ``limit``, the newest in scope of the ``older`` matches before those. Without words, the
    steps with the query's flag, newest first."""
    if not query.match:
        sql = f"""
            SELECT {_FOUND_COLUMNS} FROM steps st JOIN sessions s ON s.id = st.session_id
             WHERE st.rowid IN (SELECT fs.rowid FROM step_flags f
                                  JOIN steps fs ON fs.session_id = f.session_id AND fs.id = f.step_id
                                 WHERE :flag = 'any' OR f.kind = :flag) {_STEP_SCOPE} {_SESSION_SCOPE}
             ORDER BY st.at DESC, st.session_id, st.seq LIMIT :limit
        """
        return [_found(row) for row in database.execute(sql, _bindings(scope, flag=query.flag, limit=limit))]
    bindings = _bindings(scope, match=query.match, flag=query.flag)
    matching = f"{_matching(scope)} {_FLAG_SQL}"
    newest = _nth_match(database, query.match, window)
    rowids = [
        int(rowid)
        for (rowid,) in database.execute(
            f"SELECT step_search.rowid {matching} AND step_search.rowid >= :floor ORDER BY rank LIMIT :limit",
            {**bindings, "floor": newest, "limit": limit},
        )
    ]
    if len(rowids) < limit and newest > 0:
        rowids += [
            int(rowid)
            for (rowid,) in database.execute(
                f"SELECT step_search.rowid {matching} AND step_search.rowid >= :oldest AND step_search.rowid < :floor"
                " ORDER BY step_search.rowid DESC LIMIT :limit",
                {**bindings, "oldest": _nth_match(database, query.match, window + older), "floor": newest,
                 "limit": limit - len(rowids)},
            )
        ]  # fmt: skip
    return _found_by_rowid(database, rowids)


def _nth_match(database: Database, match: str, count: int) -> int:
    """The rowid of the ``count``-th newest step matching ``match``; 0 when fewer match."""
    rowid = database.execute(
        "SELECT rowid FROM step_search WHERE step_search MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (match, count - 1),
    ).get
    return 0 if rowid is None else int(rowid)


def _found_by_rowid(database: Database, rowids: list[int]) -> list[FoundStep]:
    rows = {
        int(rowid): _found(rest)
        for rowid, *rest in database.execute(
            f"SELECT st.rowid, {_FOUND_COLUMNS} FROM steps st JOIN sessions s ON s.id = st.session_id"
            " WHERE st.rowid IN (SELECT value FROM json_each(?))",
            (orjson.dumps(rowids).decode(),),
        )
    }
    return [rows[rowid] for rowid in rowids]


def active_sessions(database: Database, since_utc: str) -> list[str]:
    """Sessions with a start, a step or an end at or after ``since_utc`` (by their own times).

    Only sessions the store changed since then are looked at (nothing is stored before it
    happens), and the steps of open ones only (an ended session's last step is before its end).
    """
    rows = database.execute(
        """
        SELECT s.id FROM sessions s
         WHERE s.updated_at >= :since
           AND (s.started_at >= :since OR s.ended_at >= :since
                OR (s.ended_at IS NULL
                    AND (SELECT st.at FROM steps st WHERE st.session_id = s.id ORDER BY st.seq DESC LIMIT 1) >= :since))
         ORDER BY s.id
        """,
        {"since": since_utc},
    )
    return [str(session_id) for (session_id,) in rows]


def steps_naming(database: Database, match: str, scope: Scope) -> Generator[FoundStep, None, None]:
    """Edits, reads and commands whose indexed text matches ``match`` (an FTS5 query) in
    ``scope``, newest first; the caller stops reading when it has enough."""
    sql = f"""
        SELECT {_FOUND_COLUMNS} {_matching(scope, sessions=True)}
           AND st.type IN ('edit', 'read', 'command')
         ORDER BY st.at DESC, st.session_id, st.seq DESC
    """
    for row in database.execute(sql, _bindings(scope, match=match)):
        yield _found(row)


@dataclass(frozen=True, slots=True)
class TurnFacts:
    index: int
    turn_id: str
    steps: int
    first_seq: int | None
    first_step: dict[str, Any] | None  # the step that opened it (its prompt, as a rule)


def turn_facts(database: Database, session_id: str, *, limit: int) -> tuple[list[TurnFacts], int]:
    """The session's first ``limit`` turns in order with their step counts, and how many it has."""
    total = int(database.execute("SELECT count(*) FROM turns WHERE session_id = ?", (session_id,)).get)
    rows = database.execute(
        """
        SELECT t.idx, t.id, coalesce(agg.steps, 0), agg.first_seq,
               (SELECT st.record FROM steps st WHERE st.session_id = t.session_id AND st.seq = agg.first_seq)
          FROM turns t
          LEFT JOIN (SELECT turn_id, count(*) AS steps, min(seq) AS first_seq FROM steps
                      WHERE session_id = :id GROUP BY turn_id) agg ON agg.turn_id = t.id
         WHERE t.session_id = :id
         ORDER BY t.idx, t.id
         LIMIT :limit
        """,
        {"id": session_id, "limit": limit},
    )
    turns = [
        TurnFacts(index, turn_id, steps, first_seq, None if record is None else codec.load(record))
        for index, turn_id, steps, first_seq, record in rows
    ]
    return turns, total


@dataclass(frozen=True, slots=True)
class StepCounts:
    steps: int
    by_type: dict[str, int]
    failed: int
    flagged: int


def step_counts(database: Database, session_id: str) -> StepCounts:
    by_type: dict[str, int] = {}
    failed = 0
    for kind, count, failures in database.execute(
        "SELECT type, count(*), sum(outcome = 'failed') FROM steps WHERE session_id = ? GROUP BY type ORDER BY type",
        (session_id,),
    ):
        by_type[str(kind)] = int(count)
        failed += int(failures)
    flagged = int(
        database.execute("SELECT count(DISTINCT step_id) FROM step_flags WHERE session_id = ?", (session_id,)).get
    )
    return StepCounts(sum(by_type.values()), by_type, failed, flagged)


def session_record(database: Database, session_id: str) -> dict[str, Any] | None:
    row = database.execute("SELECT record FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else dict(orjson.loads(row[0]))


def actor_records(database: Database, session_id: str, *, limit: int) -> list[dict[str, Any]]:
    """The session's actors, the root first."""
    rows = database.execute(
        "SELECT record FROM actors WHERE session_id = ? ORDER BY id <> 'root', id LIMIT ?", (session_id, limit)
    )
    return [codec.load(record) for (record,) in rows]


def step_run(database: Database, session_id: str, *, from_seq: int, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` steps from ``from_seq`` on, in order."""
    rows = database.execute(
        "SELECT record FROM steps WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
        (session_id, from_seq, limit),
    )
    return [codec.load(record) for (record,) in rows]


def seq_before(database: Database, session_id: str, seq: int, count: int) -> int:
    """The seq ``count`` steps before ``seq`` (the session's first when there are fewer)."""
    first = database.execute(
        "SELECT min(seq) FROM (SELECT seq FROM steps WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?)",
        (session_id, seq, count),
    ).get
    return seq if first is None else int(first)
