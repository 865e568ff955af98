"""Capture finishes the scrub a forget could not (``postrun.store.scrub``), between its writes.

A forget whose checkpoint met a reader holding an older snapshot exits 75 and leaves the scrub
marked in the store; capture retries it at every housekeeping (and ``capture --once`` once),
never waiting for readers, and says so in its log when it is done.
"""

from __future__ import annotations

import logging

from postrun.store.db import Database
from postrun.store.scrub import finish_pending


class PendingScrub:
    """One capture's view of a pending scrub: finished when it can be, logged once each way."""

    def __init__(self, logger: logging.Logger, *, again: str = "will retry") -> None:
        self.logger = logger
        self.again = again  # when it is tried again: a service at its next housekeeping, a single run never
        self._waiting: str | None = None  # what was last said to be left

    def finish(self, database: Database | None) -> None:
        if database is None:
            return
        was_pending, left = finish_pending(database)
        if not was_pending:
            return
        if left is None:
            self._waiting = None
            self.logger.info(
                f"capture: finished the scrub a forget or an exclusion left: no byte of the removed sessions is"
                f" left in {database.path} or its -wal"
            )
            return
        if left.describe() != self._waiting:
            self._waiting = left.describe()
            self.logger.warning(
                f"capture: the scrub a forget or an exclusion left is not finished yet: {left.describe()}; {self.again}"
            )
