"""Sessions of a batched ingest stored a few at a time under one savepoint (``Database.shared_part``).

A savepoint a session costs a batched ingest of small sessions about 3 % of its time: SQLite
journals every page a savepoint changes, and one-turn sessions change the same few pages.
So a few sessions share one. When one of them fails (anything leaves its part), the shared
savepoint is rolled back and each of them is stored again under a savepoint of its own, in
the same order, so that only the one that failed is left out, exactly as when each had its
own from the start; the sessions that failed no part (refused before any write) stay as they
were.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Generic, TypeVar

from postrun.store.db import Database, SharedPart

# How many sessions, and how much of their source, share a savepoint: what a failure makes
# stored twice, and what is held meanwhile to store it again (eight one-turn sessions; a session
# of 1 MB is alone: holding two took the large slice's peak memory from 116 to 118 MB).
SHARED_SESSIONS = 16
SHARED_SOURCE_BYTES = 2**20

Stored = TypeVar("Stored")


class Shared(Generic[Stored]):
    """The sessions stored under the shared savepoint open now: each ``store`` stores one
    (``attempt``, which may be called again), ``ended`` gives back what each gave once they are
    settled."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.storing_again: str | None = None  # the session stored again on its own now
        self._part: SharedPart | None = None
        self._exit = contextlib.ExitStack()
        self._attempts: list[tuple[int, str, Callable[[], Stored]]] = []
        self._stored: list[tuple[int, Stored]] = []
        self._source_bytes = 0

    def store(self, position: int, session_id: str, source_bytes: int, attempt: Callable[[], Stored]) -> None:
        """Store a session (its index ``position``) under the shared savepoint, opening one."""
        if self._part is None:
            self._part = self._exit.enter_context(self.database.shared_part())
        self._attempts.append((position, session_id, attempt))
        self._stored.append((position, attempt()))
        self._source_bytes += source_bytes

    def due(self) -> bool:
        """Whether the shared savepoint ends now: a session failed, or it holds enough."""
        part = self._part
        return part is not None and (
            part.spoiled or len(self._attempts) >= SHARED_SESSIONS or self._source_bytes >= SHARED_SOURCE_BYTES
        )

    def ended(self) -> list[tuple[int, Stored]]:
        """End the shared savepoint: released, or rolled back and each session stored again on
        its own. What each session's store gave, in the order they were stored."""
        if self._part is None:
            return []
        spoiled = self._part
        self._part = None
        self._exit.close()
        attempts, stored = self._attempts, self._stored
        self._attempts, self._stored, self._source_bytes = [], [], 0
        if not spoiled.spoiled:
            return stored
        again: list[tuple[int, Stored]] = []
        for index, (position, session_id, attempt) in enumerate(attempts):
            self.storing_again = session_id
            self._stored = again + stored[index + 1 :]  # what ``abandoned`` gives if this fails the store
            again.append((position, attempt()))
        self.storing_again = None
        self._stored = []
        return again

    def abandoned(self) -> list[tuple[int, Stored]]:
        """What the sessions under the shared savepoint had given, but the one being stored again,
        if any (a store fault: the transaction is abandoned); ``close`` then rolls it back."""
        stored, self._stored, self._attempts, self._source_bytes = self._stored, [], [], 0
        if self._part is not None:
            self._part.spoiled = True
        return stored

    def close(self) -> None:
        """End the shared savepoint open, if any: rolled back if abandoned, else released."""
        self._part = None
        self._exit.close()
