"""Capture's store faults: a locked or full store is said once, retried with a growing delay,
and its recovery said."""

from __future__ import annotations

import logging
from pathlib import Path

from postrun.errors import PostrunError

STORE_RETRY_FIRST_SECONDS = 2.0
STORE_RETRY_MAX_SECONDS = 60.0


class StoreFaults:
    """A locked or full store: say it once, retry with a growing delay, say when it recovers."""

    def __init__(self, db: Path, logger: logging.Logger) -> None:
        self.db = db
        self.logger = logger
        self.reason: str | None = None
        self.delay = STORE_RETRY_FIRST_SECONDS

    def failed(self, error: PostrunError) -> float:
        """Log the fault (once per episode); returns how long to wait before retrying."""
        if self.reason is None:
            self.reason = error.reason
            self.logger.error(
                f"store {self.db}: {error.reason}; capture keeps running and retries"
                f" (every {STORE_RETRY_MAX_SECONDS:g} s at most)"
            )
        else:
            self.logger.debug(f"store {self.db}: still failing: {error.reason}")
            self.delay = min(self.delay * 2, STORE_RETRY_MAX_SECONDS)
        return self.delay

    def succeeded(self) -> None:
        if self.reason is not None:
            self.logger.info(f"store {self.db}: writable again")
            self.reason = None
            self.delay = STORE_RETRY_FIRST_SECONDS
