"""The review inbox's figures: how many unreviewed sessions need a look, and why.

Counted over the sessions of one scope (an agent, a workspace, or all) from the step_flags
index and the failed-steps partial index, never from records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from postrun.store.db import Database
from postrun.store.flags import SEVERITY_ORDER, strongest
from postrun.store.session_filter import (
    DANGER_SQL,
    FAILED_COMMAND_SQL,
    NEEDS_REVIEW_SQL,
    REJECTED_SQL,
    UNREVIEWED_SQL,
    SessionFilter,
    where_clause,
)


@dataclass(frozen=True, slots=True)
class KindCount:
    """Unreviewed sessions with a step flagged with ``kind``; ``severity`` the strongest seen."""

    kind: str
    severity: str
    sessions: int


@dataclass(frozen=True, slots=True)
class Inbox:
    needs_review: int  # unreviewed sessions with any of the three below
    danger: int  # ... with a danger flag
    failed_commands: int  # ... with a failed command
    rejected: int  # ... with a rejected step
    kinds: tuple[KindCount, ...]  # every flag kind among the unreviewed sessions, strongest first


def inbox(database: Database, scope: SessionFilter) -> Inbox:
    """What needs review among the sessions of ``scope`` (its agent and workspace)."""
    where, params = where_clause(scope.scope())
    narrowed = f"{where} AND {UNREVIEWED_SQL}" if where else f" WHERE {UNREVIEWED_SQL}"
    rows: list[Any] = database.execute(
        f"SELECT total({NEEDS_REVIEW_SQL}), total({DANGER_SQL}), total({FAILED_COMMAND_SQL}), total({REJECTED_SQL})"
        f" FROM sessions s{narrowed}",
        params,
    ).fetchall()
    needs, danger, failed, rejected = (int(value) for value in rows[0])
    kinds = [
        KindCount(str(kind), strongest(str(severities).split(",")), int(count))
        for kind, severities, count in database.execute(
            "SELECT f.kind, group_concat(DISTINCT f.severity), count(DISTINCT f.session_id) FROM step_flags f"
            f" WHERE f.session_id IN (SELECT s.id FROM sessions s{narrowed}) GROUP BY f.kind",
            params,
        )
    ]
    kinds.sort(key=lambda count: (-SEVERITY_ORDER.get(count.severity, 0), -count.sessions, count.kind))
    return Inbox(needs, danger, failed, rejected, tuple(kinds))
