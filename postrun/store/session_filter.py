"""Which sessions a list shows, as SQL over indexed columns, and what "needs review" means.

A session needs review while it has no verdict and it has a danger flag, a failed command or
a rejected step: found in the step_flags index and the failed commands' partial index, never
in a record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

Order = Literal["review", "newest"]
ORDERS: tuple[Order, ...] = ("review", "newest")

UNREVIEWED_SQL = "NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.session_id = s.id)"
# Sessions by what would make them need review, each list read once per query from an index
# (SQLite evaluates an uncorrelated IN list once): no per-session look-up into the steps.
DANGER_IDS = "SELECT session_id FROM step_flags WHERE severity = 'danger'"
# Every rejected step carries the rules' `rejected` flag (postrun.review.flags).
REJECTED_IDS = "SELECT session_id FROM step_flags WHERE kind = 'rejected'"
# Named: the planner cannot tell this partial index from the failed steps' one, five times bigger.
FAILED_COMMAND_IDS = (
    "SELECT session_id FROM steps INDEXED BY steps_failed_commands WHERE outcome = 'failed' AND type = 'command'"
)
_ATTENTION_IDS = f"{DANGER_IDS} UNION {REJECTED_IDS} UNION {FAILED_COMMAND_IDS}"
NEEDS_REVIEW_SQL = f"({UNREVIEWED_SQL} AND s.id IN ({_ATTENTION_IDS}))"
_LATEST_VERDICT = "(SELECT v.state FROM verdicts v WHERE v.session_id = s.id ORDER BY v.id DESC LIMIT 1)"


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """What a list of sessions shows; every field but ``order`` and ``page`` narrows it."""

    text: str | None = None  # in the title, workspace or id (case-insensitive)
    workspace: str | None = None
    agent: str | None = None  # an agent kind (``cline``, ...)
    state: str | None = None  # open | ended
    failed: bool = False
    flagged: bool = False
    flag: str | None = None  # sessions with a step flagged with this kind ("any": any kind)
    since_utc: str | None = None  # started at or after
    until_utc: str | None = None  # started before
    verdict: str | None = None  # a verdict state, or "unreviewed"
    needs_review: bool = False  # unreviewed, with a danger flag, a failed command or a rejected step
    order: Order = "newest"  # review: the sessions that need review first, then newest first
    page: int = 1

    def scope(self) -> SessionFilter:
        """Only the agent and workspace of this filter: what the inbox counts over."""
        return SessionFilter(workspace=self.workspace, agent=self.agent)


def where_clause(query: SessionFilter, matching: list[str] | None = None) -> tuple[str, list[Any]]:
    """`` WHERE ...`` over ``sessions s`` (empty when nothing narrows) and its parameters;
    ``matching``: the ids the text filter found."""
    clauses: list[str] = []
    params: list[Any] = []
    if query.workspace is not None:
        clauses.append("json_extract(s.record, '$.workspace.root') = ?")
        params.append(query.workspace)
    if query.agent is not None:
        clauses.append("s.agent = ?")
        params.append(query.agent)
    if query.state == "open":
        clauses.append("s.ended_at IS NULL")
    elif query.state == "ended":
        clauses.append("s.ended_at IS NOT NULL")
    if query.failed:
        clauses.append("EXISTS (SELECT 1 FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed')")
    if query.flagged or query.flag == "any":
        clauses.append("EXISTS (SELECT 1 FROM step_flags f WHERE f.session_id = s.id)")
    if query.flag is not None and query.flag != "any":
        clauses.append("EXISTS (SELECT 1 FROM step_flags f WHERE f.session_id = s.id AND f.kind = ?)")
        params.append(query.flag)
    if query.since_utc is not None:
        clauses.append("s.started_at >= ?")
        params.append(query.since_utc)
    if query.until_utc is not None:
        clauses.append("s.started_at < ?")
        params.append(query.until_utc)
    if query.verdict == "unreviewed":
        clauses.append(UNREVIEWED_SQL)
    elif query.verdict is not None:
        clauses.append(f"{_LATEST_VERDICT} = ?")
        params.append(query.verdict)
    if query.needs_review:
        clauses.append(NEEDS_REVIEW_SQL)
    if matching is not None:
        clauses.append("s.id IN (SELECT value FROM json_each(?))")
        params.append(orjson.dumps(matching).decode())
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params
