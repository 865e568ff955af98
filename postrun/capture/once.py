"""``postrun capture --once``: the start-up pass alone, then a tally."""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from postrun.agents.registry import enabled_roots
from postrun.capture.book import SessionBook, Watched, plan_catch_up, skipped_line
from postrun.capture.caches import MappingCaches
from postrun.capture.context import CaptureContext, capture_lock, watching_line
from postrun.capture.job import IngestJob, Outcome
from postrun.capture.scheduler import Reason
from postrun.capture.scrub import PendingScrub
from postrun.capture.signals import Signals
from postrun.ingest.pool import Processes
from postrun.review.exclude import Exclusions
from postrun.store.db import Database
from postrun.text import plural


@dataclass
class OnceSummary:
    present: int = 0
    ingested: int = 0
    updated: int = 0
    unchanged: int = 0
    torn: int = 0
    failed: int = 0
    elapsed_ms: float = 0.0
    interrupted: int = 0  # sessions not read because a stop (Ctrl-C, SIGTERM) came first
    ctrl_c: bool = False  # that stop was Ctrl-C (SIGINT): the command exits 130

    def line(self) -> str:
        line = (
            f"summary: {plural(self.present, 'session', grouped=False)}, {self.ingested} ingested,"
            f" {self.updated} updated,"
            f" {self.unchanged} unchanged, {self.torn} torn, {self.failed} failed in {round(self.elapsed_ms)} ms"
        )
        if self.interrupted:
            line += f"; interrupted: {self.interrupted} not read yet (read on the next run)"
        return line

    def count(self, outcome: Outcome) -> None:
        if outcome in ("ingested", "updated", "unchanged", "torn"):
            setattr(self, outcome, getattr(self, outcome) + 1)
        elif outcome in ("skipped", "gone"):
            self.unchanged += 1  # nothing to read (same files, or gone meanwhile): the store keeps it as it was
        elif outcome in ("failed", "store"):
            self.failed += 1


class _OnceHost:
    """``--once`` reports every problem and never retries."""

    def report_once(self, session_id: str, problem: Hashable) -> bool:
        return True

    def retry_later(self, session_id: str, reason: Reason, delay: float) -> None:
        return None

    def reread(self, session_id: str) -> None:
        return None

    def catch_up(self, session_ids: Iterable[str]) -> None:
        return None

    def retry_catch_up(self, delay: float) -> None:
        return None


def run_once(context: CaptureContext, signals: Signals | None = None) -> OnceSummary:
    """The start-up pass alone, over every root of every agent capture watches: ingest what is
    new or changed, then return the tally. A stop (``signals``) ends it between two batches:
    the tally then counts what was not read (``interrupted``)."""
    settings, logger = context.settings, context.logger
    started = time.monotonic()
    with capture_lock(context.paths):
        watched = [
            Watched(agent.source(root), SessionBook()) for agent, root in enabled_roots(context.loaded, context.environ)
        ]
        job = IngestJob(
            host=_OnceHost(),
            sources=watched,
            db_path=context.paths.db,
            database=Database.open(context.paths.db),
            max_bytes=settings.max_bytes,
            keep_raw=settings.keep_raw,
            caches=MappingCaches(context.clock, limit=0),
            logger=logger,
            exclusions=Exclusions.of(settings.exclude, str(context.paths.home)),
            mapping_processes=Processes.wanted(settings.ingest_processes),
        )
        progress = context.progress
        try:
            assert job.database is not None
            summary = OnceSummary()
            changed: list[str] = []
            for each in watched:
                plan = plan_catch_up(each.source, job.database, wall_now=time.time(), keep_raw=settings.keep_raw)
                if not plan.root_found:
                    logger.warning(f"{each.kind}: {each.source.root} does not exist; nothing to ingest")
                for entry in plan.skipped:
                    if entry.warn:
                        logger.warning(skipped_line(entry, each.kind))
                logger.info(watching_line(each.kind, each.source.root, len(plan.present), len(plan.changed)))
                each.book.load(plan)
                summary.present += len(plan.present)
                summary.unchanged += len(plan.unchanged)
                changed.extend(plan.changed)
            job.refresh_flags(progress)
            if progress is not None and changed:
                progress.start(len(changed))

            def stopping() -> bool:
                return signals is not None and signals.stop

            handled = 0
            if changed and not stopping():
                for _, result in job.startup.run(changed, stopping):  # stops between two batches
                    summary.count(result.outcome)
                    handled += 1
                    if progress is not None:
                        progress.advance()
            if handled < len(changed):
                if stopping():
                    summary.interrupted = len(changed) - handled
                    summary.ctrl_c = signals is not None and signals.interrupt
                    logger.info("capture: interrupted; the sessions not read yet are read on the next run")
                else:
                    summary.failed += len(changed) - handled  # not stored: the store failed (said once)
            # One a forget could not finish, or of a session that turned out excluded just now.
            again = "run `postrun capture --once` again once no other process reads the store"
            PendingScrub(logger, again=again).finish(job.database)
        finally:
            if progress is not None:
                progress.finish()
            job.close()
    summary.elapsed_ms = (time.monotonic() - started) * 1000
    return summary
