"""Capture's re-flag after the flag rules changed (``postrun.ingest.reflag``), in the background.

A store of 100,000 steps takes some 14 s to re-flag, a large one minutes: longer than a service
manager waits for a start. So capture reports ready first and re-flags on its ingest thread,
through the one writer, a transaction at a time whenever no live work and no catch-up is due;
how far it got is in the capture lock's record, which ``postrun status`` shows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import apsw

from postrun.errors import StoreError
from postrun.ingest.reflag import Reflag
from postrun.store.db import describe_sqlite_error

if TYPE_CHECKING:
    from postrun.capture.job import IngestJob


class BackgroundReflag:
    """The re-flag one capture runs; ``__call__`` is the dispatcher's background work."""

    def __init__(self, job: IngestJob, reflag: Reflag, logger: logging.Logger, report: Callable[[str | None], None]):
        self.job = job
        self.reflag = reflag
        self.logger = logger
        self.report = report  # the progress as ``done/total``; None once it is over
        self._reported = 0

    @classmethod
    def due(
        cls, job: IngestJob, logger: logging.Logger, report: Callable[[str | None], None]
    ) -> BackgroundReflag | None:
        """The store's re-flag when the flag rules changed since its sessions were flagged."""
        assert job.database is not None
        reflag = Reflag.due(job.database, clock=job.ingester.clock, captured_on=job.ingester.hostname)
        if reflag is None:
            return None
        if not reflag.total:
            reflag.run()  # a new store: only the rules version to record
            return None
        logger.info(f"capture: re-flagging {reflag.total} stored sessions in the background (the flag rules changed)")
        report(f"0/{reflag.total}")
        return cls(job, reflag, logger, report)

    def __call__(self, give_way: Callable[[], bool]) -> float | None:
        """The next part of the re-flag (on the ingest thread): None when it is over, else how
        long to wait before the next part (0: as soon as nothing else is due)."""
        job, reflag = self.job, self.reflag
        if not job.check_store():
            return job.faults.delay
        if job.database is not reflag.database:
            # A new store: every session in it is flagged under these rules as it is stored.
            self.report(None)
            return None
        try:
            finished = reflag.run(give_way, advance=self._advanced)
        except apsw.Error as exc:
            return job.faults.failed(StoreError(str(reflag.database.path), describe_sqlite_error(exc)))
        job.faults.succeeded()
        if not finished:
            self.report(f"{reflag.done}/{reflag.total}")
            return 0.0
        self.report(None)
        self.logger.info(f"capture: re-flagged {reflag.total} stored sessions (the flag rules changed)")
        return None

    def _advanced(self) -> None:
        # Once per transaction (a few times a second at most): ``done`` moves a transaction at a time.
        if self.reflag.done != self._reported:
            self._reported = self.reflag.done
            self.report(f"{self.reflag.done}/{self.reflag.total}")
