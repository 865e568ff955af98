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
    DANGER_IDS,
    FAILED_COMMAND_IDS,
    NEEDS_REVIEW_SQL,
    REJECTED_IDS,
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
    needing = f"{where} AND {NEEDS_REVIEW_SQL}" if where else f" WHERE {NEEDS_REVIEW_SQL}"
    why: list[Any] = database.execute(
        f"SELECT s.id IN ({DANGER_IDS}), s.id IN ({FAILED_COMMAND_IDS}), s.id IN ({REJECTED_IDS})"
        f" FROM sessions s{needing}",
        params,
    ).fetchall()
    needs = len(why)
    danger, failed, rejected = (sum(1 for row in why if row[column]) for column in range(3))
    unreviewed = f"{where} AND {UNREVIEWED_SQL}" if where else f" WHERE {UNREVIEWED_SQL}"
    # Each session's kinds first (a pair per session and kind), then the sessions they are in.
    kinds = [
        KindCount(str(kind), strongest(str(severities).split(",")), int(count))
        for kind, severities, count in database.execute(
            "SELECT g.kind, group_concat(DISTINCT g.severities), count(*) FROM"
            " (SELECT kind, session_id, group_concat(DISTINCT severity) AS severities FROM step_flags"
            "   GROUP BY kind, session_id) g"
            f" JOIN sessions s ON s.id = g.session_id{unreviewed} GROUP BY g.kind",
            params,
        )
    ]
    kinds.sort(key=lambda count: (-SEVERITY_ORDER.get(count.severity, 0), -count.sessions, count.kind))
    return Inbox(needs, danger, failed, rejected, tuple(kinds))
