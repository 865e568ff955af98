"""One session's ingest as the capture runs it, on the ingest thread (the start-up catch-up's
sessions are stored by ``StartupCatchUp``, then recorded and logged here the same way).

Every ingest logs one line (at DEBUG for the start-up catch-up, at INFO otherwise), led by
the session's agent kind (``cline``, …)::

    <kind> <ingested|updated|unchanged> <id> (<N> steps, <T> turns, <W> written) on <startup|event|poll> in <ms> ms

A torn file logs, once per change::

    <kind> <id>: <messages|manifest> file not parseable yet (mid-write?); will retry on next change

A transcript caught while a line is written (append-only agents) is stored up to that line,
and logs, once per change (with the file's path when it is a helper's)::

    <kind> <id>: transcript line not complete yet (mid-write?); will retry on next change

A helper's transcript that cannot be used does not hold the session back: the rest is
stored, and the file logs, once per change::

    <kind> <id>: <file>: messages file not parseable yet (mid-write?); its stored steps kept, will retry on next change
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from postrun.agents.registry import Location, Source, as_source
from postrun.capture.book import SessionBook, Watched, plan_catch_up
from postrun.capture.caches import CACHE_LIMIT, MappingCaches
from postrun.capture.faults import StoreFaults
from postrun.capture.freshness import FingerprintKey, fingerprint_key
from postrun.capture.scheduler import Due, Reason
from postrun.capture.startup import StartupCatchUp
from postrun.errors import NotParseableYet, NotRecorded, PostrunError, SourceError, StoreError, Unreadable
from postrun.ingest.ingester import Ingester, IngestOutcome, Progress, goes_on
from postrun.ingest.pool import Processes
from postrun.ingest.prepare import ValidMemo
from postrun.ingest.reflag import refresh_flags
from postrun.records import SourceFile
from postrun.review.apply import FlagMemo
from postrun.review.exclude import Exclusions
from postrun.store.db import Database
from postrun.text import plural

# A file caught mid-write whose last change is this recent is being written: a write of a large
# file may take seconds while the disk is busy writing other data back (an 11.5 MB rewrite was
# caught torn more than a second after it began), while a helper killed mid-line stays old.
MID_WRITE_SECONDS = 10.0

Outcome = Literal["ingested", "updated", "unchanged", "torn", "failed", "store", "skipped", "gone"]


@dataclass(frozen=True, slots=True)
class JobResult:
    outcome: Outcome
    cost_seconds: float | None = None  # CPU time of the ingest; None when nothing was read
    # Stored, but a helper's file could not be used or a transcript's last line was not complete:
    # not resolved, so what was logged of it is not logged again at every read while it lasts.
    partial: bool = False

    @property
    def resolved(self) -> bool:
        return self.outcome in ("ingested", "updated", "unchanged") and not self.partial


class JobHost(Protocol):
    """What an ingest needs from whoever schedules it."""

    def report_once(self, session_id: str, problem: Hashable) -> bool: ...

    def retry_later(self, session_id: str, reason: Reason, delay: float) -> None: ...

    def reread(self, session_id: str) -> None: ...

    def catch_up(self, session_ids: Iterable[str]) -> None: ...

    def retry_catch_up(self, delay: float) -> None: ...


class IngestJob:
    """Ingests one session when the scheduler says so. Runs on one thread at a time.

    Nothing is read when the session's fingerprints are those of its last read; the
    store's file identity is checked before each ingest (a removed store is recreated
    and caught up); a torn file or a bad session is reported once per change.

    ``sources`` are the roots capture watches, each with its session book (``root`` and
    ``book``: one source's shorthand; a bare path is a root of the first registered agent).
    """

    def __init__(
        self,
        *,
        host: JobHost,
        root: Path | Source | None = None,
        sources: Sequence[Watched] = (),
        db_path: Path,
        database: Database,
        max_bytes: int,
        keep_raw: bool = True,
        raw_copy_seconds: float = 0.0,
        book: SessionBook | None = None,
        caches: MappingCaches,
        logger: logging.Logger,
        on_ingested: Callable[[], None] = lambda: None,
        wall: Callable[[], float] = time.time,
        exclusions: Exclusions | None = None,
        mapping_processes: Processes | None = None,
    ) -> None:
        if not sources:
            assert root is not None and book is not None, "a source to ingest from"
            sources = (Watched(as_source(root), book),)
        self.sources = tuple(sources)
        self.db_path = db_path
        self.database: Database | None = database
        self.max_bytes = max_bytes
        self.keep_raw = keep_raw
        self.raw_copy_seconds = raw_copy_seconds
        self.exclusions = exclusions
        self.mapping_processes = mapping_processes
        self.ingester = self._ingester(database)
        self.caches = caches
        self.logger = logger
        self.on_ingested = on_ingested
        self.wall = wall
        self.faults = StoreFaults(db_path, logger)
        self.host = host
        self.startup = StartupCatchUp(self)

    def run(self, due: Due, *, copy: bool = False) -> JobResult:
        """Ingest the session if its files changed since the last read (``copy``: read it anyway,
        to copy files a live ingest left behind its records into the vault)."""
        session_id = due.session_id
        watched = self.watched(session_id)
        location = watched.source.location(session_id)
        files = self.present_files(location)
        if isinstance(files, JobResult):
            return files
        if not self._store_ready(due):
            return JobResult("store")
        key = fingerprint_key(files)
        if not copy and watched.book.was_read_at(session_id, key):
            self.logger.debug(
                f"{watched.kind} {session_id}: not read: files unchanged since the last read (on {due.reason})"
            )
            return JobResult("skipped")
        assert self.database is not None
        started = time.thread_time()
        try:
            live = due.reason != "startup" and not copy
            outcome, cache = self.ingester.ingest(location, self.caches.get(session_id), live=live)
        except StoreError as exc:
            self.host.retry_later(session_id, due.reason, self.faults.failed(exc))
            return JobResult("store", time.thread_time() - started)
        except PostrunError as exc:
            return self.not_stored(session_id, exc, key, files, time.thread_time() - started)
        except Exception as exc:  # one bad session must never stop the capture
            detail = f"internal error: {type(exc).__name__}: {exc}"
            self.logger.debug(f"{watched.kind} {session_id}: {detail}", exc_info=True)
            return self._failed(session_id, ("failed", key), detail, key, time.thread_time() - started)
        cost = time.thread_time() - started
        if due.reason != "startup" or goes_on(location, outcome):
            self.caches.put(session_id, cache)  # it is likely to change again soon
        result = self.stored(outcome, key, files, due.reason, cost)
        self.on_ingested()
        return result

    def watched(self, session_id: str) -> Watched:
        """The source whose book holds the session (the first source when none does yet)."""
        return next((watched for watched in self.sources if session_id in watched.book), self.sources[0])

    def present_files(self, location: Location) -> tuple[SourceFile, ...] | JobResult:
        """The session's fingerprints now, or what to report when they cannot be had (it is gone)."""
        session_id = location.session_id
        try:
            files = self.watched(session_id).source.adapter.fingerprint(location)
        except PostrunError as exc:
            return self._failed(session_id, ("stat", str(exc)), str(exc), None)
        if not files or files[0].path != str(location.where):
            self.logger.debug(f"{location.agent} {session_id}: no {location.where.name} any more; stored data kept")
            return JobResult("gone")
        return files

    def stored(
        self,
        outcome: IngestOutcome,
        key: FingerprintKey,
        files: Sequence[SourceFile],
        reason: Reason,
        cost: float | None,
    ) -> JobResult:
        """What an ingest that stored the session (read at ``key``, ``files``) records and logs."""
        session_id = outcome.session_id
        self.faults.succeeded()
        watched = self.watched(session_id)
        # A helper's file it could not open (permissions) is looked at again by the poller, which
        # has this read again once it can be opened: not a read of the whole session at each tick.
        unopened = [error.where for error in outcome.unread if isinstance(error, Unreadable)]
        watched.book.read(session_id, key, is_open=outcome.open, unopened=unopened)
        # A catch-up over a long history would print thousands of these: its progress is the
        # bar and the `caught up` line; live ingests are news.
        self.logger.log(
            logging.DEBUG if reason == "startup" else logging.INFO,
            f"{watched.kind} {outcome.status} {session_id} ({plural(outcome.steps, 'step', grouped=False)},"
            f" {plural(outcome.turns, 'turn', grouped=False)}, {outcome.rows_written} written) on {reason}"
            f" in {round(outcome.elapsed_ms)} ms",
        )
        self._report_unread(session_id, outcome.unread, files)
        self._report_incomplete(session_id, outcome.incomplete, files)
        torn = [error.where for error in outcome.unread if isinstance(error, NotParseableYet)]
        if self._still_written([*outcome.incomplete, *torn], files):
            self.host.reread(session_id)
        return JobResult(outcome.status, cost, partial=bool(outcome.unread or outcome.incomplete))

    def not_stored(
        self, session_id: str, exc: PostrunError, key: FingerprintKey, files: Sequence[SourceFile], cost: float | None
    ) -> JobResult:
        """What an ingest that did not store the session (read at ``key``, ``files``) records and logs."""
        watched = self.watched(session_id)
        if isinstance(exc, NotRecorded):
            watched.book.read(session_id, key)  # looked at again only when its files change
            if self.host.report_once(session_id, ("not recorded", type(exc).__name__)):
                self.logger.info(f"{watched.kind} {session_id}: {exc.reason}")
            return JobResult("skipped", cost)
        if isinstance(exc, NotParseableYet):
            watched.book.read(session_id, key)
            # Once per change of the torn file itself: a touched manifest next to a torn
            # messages file is read again, but the same tear is not news.
            torn = next(((f.path, f.size, f.mtime_ns, f.ino) for f in files if f.path == exc.where), key)
            if self._still_written([exc.where], files):
                self.host.reread(session_id)
            if self.host.report_once(session_id, ("torn", exc.kind, torn)):
                self.logger.info(
                    f"{watched.kind} {session_id}: {exc.kind} file not parseable yet (mid-write?);"
                    " will retry on next change"
                )
            else:
                self.logger.debug(
                    f"{watched.kind} {session_id}: {exc.kind} file still not parseable (already reported)"
                )
            return JobResult("torn", cost)
        if isinstance(exc, Unreadable):
            # Not marked read, and looked at again at each poll: making the file readable
            # (chmod) changes none of its fingerprints, so waiting for a change would wait
            # for the agent's next write, or forever for a finished session.
            watched.book.unsee(session_id)
            return self._failed(session_id, ("failed", key), str(exc), None, cost)
        return self._failed(session_id, ("failed", key), str(exc), key, cost)

    def _still_written(self, paths: Iterable[str], files: Sequence[SourceFile]) -> bool:
        """True when one of ``paths`` (files a read caught mid-write) changed within
        ``MID_WRITE_SECONDS`` before the read: its writer is likely finishing that write, and
        the rest is worth reading as soon as it settles. A helper killed mid-line long ago is
        not, and re-reading a busy session after each of its other changes would undo the debounce."""
        caught = set(paths)
        if not caught:  # nearly every read: nothing was caught mid-write
            return False
        now_ns = self.wall() * 1e9
        return any(f.path in caught and now_ns - f.mtime_ns < MID_WRITE_SECONDS * 1e9 for f in files)

    def _report_incomplete(self, session_id: str, paths: Iterable[str], files: Sequence[SourceFile]) -> None:
        """One line per transcript whose last line was not complete yet, once per change of it
        (what came before it was stored; the line is read again when the file changes)."""
        watched = self.watched(session_id)
        seen = {f.path: (f.path, f.size, f.mtime_ns, f.ino) for f in files}
        for path in paths:
            if not self.host.report_once(session_id, ("incomplete", seen.get(path, path))):
                continue
            where = "" if files and files[0].path == path else f"{path}: "
            self.logger.info(
                f"{watched.kind} {session_id}: {where}transcript line not complete yet (mid-write?);"
                " will retry on next change"
            )

    def _report_unread(self, session_id: str, unread: Iterable[SourceError], files: Iterable[SourceFile]) -> None:
        """One line per helper file that could not be used, once per change of that file."""
        seen = {f.path: (f.path, f.size, f.mtime_ns, f.ino) for f in files}
        problems = tuple(unread)
        if not problems:
            return
        kind = self.watched(session_id).kind
        # Every one is asked about (each is then met now), not only until one is news.
        news = [
            problem
            for problem in problems
            if self.host.report_once(session_id, ("unread", seen.get(problem.where, problem.where)))
        ]
        if len(news) < len(problems):
            self.logger.debug(
                f"{kind} {session_id}: {len(problems) - len(news)} helper file(s) still not usable (already reported)"
            )
        for problem in news:
            if isinstance(problem, NotParseableYet):
                self.logger.info(
                    f"{kind} {session_id}: {problem.where}: {problem.kind} file not parseable yet (mid-write?);"
                    " its stored steps kept, will retry on next change"
                )
            else:
                self.logger.error(f"{kind} {session_id}: {problem}; its stored steps kept")

    def _failed(
        self, session_id: str, problem: Hashable, message: str, key: int | None, cost: float | None = None
    ) -> JobResult:
        watched = self.watched(session_id)
        if key is not None:
            watched.book.read(session_id, key)  # retried on the next change, not on every poll
        if self.host.report_once(session_id, problem):
            self.logger.error(f"{watched.kind} {session_id}: {message}")
        return JobResult("failed", cost)

    def copy_behind(self, *, everything: bool = False, until: float | None = None) -> None:
        """Copy into the vault the open sessions whose newest copy is ``raw_copy_seconds`` old and
        behind their records (``everything``: all that are behind, as capture stops), until the
        ``time.monotonic()`` deadline ``until``; what is left is copied at the next start-up.
        Nothing is copied into a store that replaced the one the records are in."""
        if self.database is None or self.database.identity_changed():
            return
        for session_id in self.ingester.copies_due(everything=everything):
            if until is not None and time.monotonic() >= until:
                return
            # Tried once: gone, torn or failing files have nothing to copy, and their next
            # change is ingested (and copied when due) anyway.
            self.ingester.behind.pop(session_id, None)
            self.run(Due(session_id, "poll"), copy=True)

    def check_store(self) -> bool:
        """Between ingests: notice a removed store even when nothing changes. False when the
        store cannot be opened now."""
        return self._store_ready(None)

    def _store_ready(self, due: Due | None) -> bool:
        """Check the store file's identity before the transaction; recreate it if it went away."""
        if self.database is not None and not self.database.identity_changed():
            return True
        if self.database is not None:
            self.logger.error(
                f"store {self.db_path}: the database file was removed or replaced; recreating it and catching up"
            )
            self.startup.close()  # its catch-up was of the old store
            self.database.close()  # before opening the new file: the old WAL must not meet it
            self.database = None
        try:
            database = Database.open(self.db_path)
        except StoreError as exc:
            delay = self.faults.failed(exc)
            if due is not None:
                self.host.retry_later(due.session_id, due.reason, delay)
            return False
        self.database = database
        self.ingester = self._ingester(database)
        self.caches.clear()
        for watched in self.sources:
            watched.book.forget_reads()
            plan = plan_catch_up(watched.source, database, wall_now=self.wall(), keep_raw=self.keep_raw)
            watched.book.load(plan)
            self.host.catch_up(plan.changed)
            self.logger.info(f"{watched.kind}: catching up {len(plan.changed)} sessions into the new store")
        return True

    def _ingester(self, database: Database) -> Ingester:
        return Ingester(
            database,
            max_bytes=self.max_bytes,
            keep_raw=self.keep_raw,
            exclusions=self.exclusions,
            flag_memo=FlagMemo(CACHE_LIMIT),
            valid_memo=ValidMemo(CACHE_LIMIT),
            raw_copy_seconds=self.raw_copy_seconds,
            mapping_processes=self.mapping_processes,
        )

    def refresh_flags(self, progress: Progress | None) -> None:
        """Re-flag the stored sessions when the flag rules changed since they were flagged."""
        assert self.database is not None
        count = refresh_flags(
            self.database, now=self.ingester.clock(), captured_on=self.ingester.hostname, progress=progress
        )
        if count:
            self.logger.info(f"capture: re-flagged {count} stored sessions (the flag rules changed)")

    def close(self) -> None:
        self.startup.close()
        if self.database is not None:
            self.database.close()
            self.database = None
