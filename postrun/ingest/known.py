"""The step and turn digests this ingester's last live write of a session left in the store.

A live session is re-ingested after each message; reading back the digests of its thousands
of stored steps (and of its turns) to find the one new step was most of the store's part of
a re-ingest. When nothing but this ingester wrote to the store since its last write, the
store holds exactly the steps and turns that write left, so their digests are compared
instead of read back.

Nothing else wrote when both of these are as this ingester's last commit left them: SQLite's
``data_version`` (it changes when any other connection commits: a ``postrun ingest``, a
forget, a restore, another process) and the connection's ``total_changes`` (it counts every
row this connection changed, whoever on it did: a forget, a re-flag, an excluded session
removed, a rolled-back write). Anything else, or a write inside a caller's transaction (not
committed yet), forgets them all: the next write reads the digests back.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from postrun.records import StepRow
from postrun.store.db import Database
from postrun.store.write import StepWrite, StoredTurns

KNOWN_SESSIONS = 8  # as many as capture keeps mapping caches for (the sessions changing now)


def _mark(database: Database) -> tuple[int, int]:
    connection = database.connection
    return int(connection.execute("PRAGMA data_version").get), connection.total_changes()


@dataclass(frozen=True, slots=True)
class StoredSteps:
    """What the store holds of a session's steps (id -> digest), the rows that wrote them, and
    its turns."""

    digests: dict[str, str]
    rows: tuple[StepRow | StepWrite, ...] = ()
    turns: StoredTurns = field(default_factory=StoredTurns)


class KnownSteps:
    """Each recent live session's stored steps (``StoredSteps``), valid while the store's mark is the
    one this ingester's last commit left."""

    def __init__(self, limit: int = KNOWN_SESSIONS) -> None:
        self.limit = limit
        self._mark: tuple[int, int] | None = None
        self._sessions: OrderedDict[str, StoredSteps] = OrderedDict()

    def take(self, database: Database, session_id: str) -> StoredSteps | None:
        """The session's stored steps, when nothing else wrote since this ingester's last
        commit; call it in the write transaction, before it writes anything."""
        if _mark(database) != self._mark:
            self._sessions.clear()
            return None
        return self._sessions.pop(session_id, None)

    def wrote(self, database: Database, session_id: str, known: StoredSteps | None) -> None:
        """After a write of the session (``known``: its steps as now stored; None: unknown)."""
        if not database.connection.getautocommit():  # a caller's transaction: not committed yet
            self._mark = None
            self._sessions.clear()
            return
        self._mark = _mark(database)
        self._sessions.pop(session_id, None)
        if known is None:
            return
        self._sessions[session_id] = known
        while len(self._sessions) > self.limit:
            self._sessions.popitem(last=False)
