"""What the review app keeps of every session between requests: agent, workspace, text to filter by."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import orjson

from postrun.store.db import Database
from postrun.store.titles import TITLE_SQL
from postrun.timestamps import utc_iso

_STAMP_SLACK = timedelta(minutes=1)  # far beyond the store's busy timeout


class SessionIndex:
    """Each session's agent and workspace, and its id, workspace and title in lower case (the
    text filter).

    Finding a title needs the session's first prompt, a workspace the session's record:
    reading them for every session on every request is too slow for a big store, so the
    index keeps them and each refresh reads only the sessions changed since the last one.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._workspaces: dict[str, str] = {}
        self._agents: dict[str, str] = {}
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
        self._read_changed(database, "WHERE updated_at >= ?", (since,))
        # Every stored session is indexed now, so one more in the index is a forgotten one (or
        # a store put back from a backup): then every session is looked at again. One
        # committed meanwhile is indexed at the next refresh, which sees the difference then.
        if int(database.execute("SELECT count(*) FROM sessions").get) != len(self):
            self._drop_forgotten(database)
            self._read_changed(database, "", ())

    def __len__(self) -> int:
        with self._lock:
            return len(self._updated)

    def _read_changed(self, database: Database, where: str, bindings: tuple[str, ...]) -> None:
        """Index the sessions ``where`` picks whose stamp differs from the indexed one."""
        stamps: list[Any] = database.execute(f"SELECT id, updated_at FROM sessions {where}", bindings).fetchall()
        with self._lock:
            changed = [session_id for session_id, updated in stamps if self._updated.get(session_id) != updated]
        if not changed:
            return
        rows: list[Any] = database.execute(
            f"SELECT s.id, s.updated_at, s.agent, coalesce(json_extract(s.record, '$.workspace.root'), ''),"
            f" {TITLE_SQL} FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(changed).decode(),),
        ).fetchall()
        with self._lock:
            for session_id, updated, agent, workspace, title in rows:
                self._texts[session_id] = f"{session_id} {workspace} {title}".lower()
                self._workspaces[session_id] = workspace
                self._agents[session_id] = agent
                self._updated[session_id] = updated
                self._seen = max(self._seen, updated)

    def _drop_forgotten(self, database: Database) -> None:
        present = {session_id for (session_id,) in database.execute("SELECT id FROM sessions")}
        with self._lock:
            for gone in [session_id for session_id in self._updated if session_id not in present]:
                for kept in (self._texts, self._workspaces, self._agents, self._updated):
                    kept.pop(gone, None)

    def workspaces(self) -> list[str]:
        """Every workspace root of an indexed session, by name."""
        with self._lock:
            return sorted({root for root in self._workspaces.values() if root})

    def agents(self) -> list[str]:
        """Every agent kind of an indexed session, by name."""
        with self._lock:
            return sorted(set(self._agents.values()))

    def agent_of(self, session_id: str) -> str | None:
        with self._lock:
            return self._agents.get(session_id)

    def matching(self, text: str) -> list[str]:
        needle = text.lower()
        with self._lock:
            return [session_id for session_id, haystack in self._texts.items() if needle in haystack]
