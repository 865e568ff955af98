"""Stored sessions flagged again from their stored records, after the flag rules changed.

A re-flag runs a transaction of at most ``BATCH_SECONDS`` at a time (each session's read and
write inside it, so nothing another writer stored meanwhile is written over), in the order
the sessions were started; capture runs it on its ingest thread, between live work, after
it reported ready (``Reflag.run``'s ``give_way``); ``postrun ingest`` and ``capture --once``
run it to the end first (``refresh_flags``). The rules version is stored once every stored
session was re-flagged: a re-flag stopped half-way starts again at the next start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from postrun.review.apply import flag_session
from postrun.review.flags import RULES_VERSION
from postrun.store.db import Database
from postrun.store.flags import set_rules_version, stored_rules_version
from postrun.store.remap import session_ids, stored_mapped_session
from postrun.store.write import upsert_session

if TYPE_CHECKING:
    from postrun.ingest.ingester import Progress

# One transaction holds the store's write lock: another writer waits at most this long for it.
BATCH_SECONDS = 0.5


class Reflag:
    """The stored sessions still to re-flag under the current rules (``due`` makes one)."""

    def __init__(
        self,
        database: Database,
        session_ids: list[str],
        *,
        clock: Callable[[], datetime],
        captured_on: str,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.database = database
        self.session_ids = session_ids
        self.clock = clock
        self.captured_on = captured_on
        self.timer = timer
        self.done = 0  # sessions re-flagged (committed) so far

    @classmethod
    def due(cls, database: Database, *, clock: Callable[[], datetime], captured_on: str) -> Reflag | None:
        """The re-flag the store needs, or None when its sessions were flagged under these rules."""
        if stored_rules_version(database) == RULES_VERSION:
            return None
        return cls(database, session_ids(database), clock=clock, captured_on=captured_on)

    @property
    def total(self) -> int:
        return len(self.session_ids)

    def run(self, give_way: Callable[[], bool] = lambda: False, advance: Callable[[], None] = lambda: None) -> bool:
        """Re-flag the sessions left, a transaction at a time, until every one is (then the rules
        version is stored: True) or ``give_way()`` says to stop after a transaction (False).
        ``advance`` is called once per session re-flagged. Raises apsw.Error from the store."""
        while self.done < self.total:
            with self.database.transaction():
                started = self.timer()
                position = self.done
                while position < self.total and (position == self.done or self.timer() - started < BATCH_SECONDS):
                    self._reflag(self.session_ids[position])
                    position += 1
            advanced, self.done = position - self.done, position
            for _ in range(advanced):
                advance()
            if self.done < self.total and give_way():
                return False
        set_rules_version(self.database, RULES_VERSION)
        return True

    def _reflag(self, session_id: str) -> None:
        exists = self.database.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if exists is None:
            return  # forgotten (or the store rebuilt) since the re-flag began
        flagged = flag_session(stored_mapped_session(self.database, session_id))
        upsert_session(self.database, flagged, now=self.clock(), captured_on=self.captured_on)


def refresh_flags(database: Database, *, now: datetime, captured_on: str, progress: Progress | None = None) -> int:
    """Re-flag every stored session from its stored records when the rules changed since it was
    flagged (the normal upsert: history keeps the earlier versions), to the end. Returns how
    many were re-flagged."""
    reflag = Reflag.due(database, clock=lambda: now, captured_on=captured_on)
    if reflag is None:
        return 0
    if progress is not None and reflag.total:
        progress.start(reflag.total, "re-flagging (the flag rules changed)")
    try:
        reflag.run(advance=progress.advance if progress is not None else lambda: None)
    finally:
        if progress is not None:
            progress.finish()
    return reflag.total
