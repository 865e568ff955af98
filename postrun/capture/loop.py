"""The running capture (``Capture``): one configuration's worth of sources, its threads and its main-thread loop.

Capture watches every root of every agent the ``agents`` setting names (the registry says
which roots and how to read them), each with its own session book, poller and watcher.

Threads: the main thread waits for signals and talks to the service manager (sd_notify);
one ingest thread (``Dispatcher``) runs every ingest of every agent, so the store has one
connection and one writer; a poll thread per root lists and stats; watchdog's threads turn
events into hints.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from postrun.agents.registry import enabled_roots
from postrun.capture.book import SessionBook, Watched, plan_catch_up
from postrun.capture.caches import MappingCaches
from postrun.capture.context import CaptureContext, watching_line
from postrun.capture.dispatcher import Dispatcher
from postrun.capture.job import IngestJob
from postrun.capture.lock import CaptureLock
from postrun.capture.notify import Notifier
from postrun.capture.poller import Poller, root_state
from postrun.capture.reflag import BackgroundReflag
from postrun.capture.scheduler import Due, Scheduler
from postrun.capture.scrub import PendingScrub
from postrun.capture.signals import Signals
from postrun.capture.watcher import MAX_FOLDER_WATCHES, SessionWatcher
from postrun.errors import AlreadyRunning
from postrun.heap import trimmer
from postrun.ingest.pool import Processes
from postrun.mirror import start_mirror
from postrun.mirror.target import mirror_target
from postrun.review.exclude import Exclusions
from postrun.store.db import Database
from postrun.text import plural
from postrun.timestamps import utc_now

if TYPE_CHECKING:
    from postrun.mirror.worker import MirrorWorker

STOP_GRACE_SECONDS = 4.0  # SIGTERM: the ingest in progress gets this long (exit within 5 s)
MAIN_TICK_SECONDS = 1.0
HURRY_CHECK_SECONDS = 0.1  # a reload waiting for an ingest looks this often for a stop
MIRROR_STOP_GRACE_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class _Running:
    """One agent's root as the running capture watches it."""

    watched: Watched
    poller: Poller
    watcher: SessionWatcher | None


class Capture:
    """One configuration's worth of capture: built at start and again after SIGHUP."""

    def __init__(
        self,
        context: CaptureContext,
        lock: CaptureLock,
        *,
        notifier: Notifier,
        first: bool,
        reported: dict[str, tuple[Hashable, ...]] | None = None,
    ) -> None:
        self.context = context
        self.settings = context.settings
        self.logger = context.logger
        self.lock = lock
        self.notifier = notifier
        self.first = first
        self.running: list[_Running] = []
        self.caches = MappingCaches(context.clock)
        # Capture reuses big freed blocks (``heap.reuse_big_blocks``): they go back to the system
        # once the catch-up is done, and at each full sweep (idle sessions' caches dropped).
        self._give_back = trimmer()
        self.scheduler = Scheduler(context.clock, debounce_seconds=self.settings.debounce_seconds)
        # Problems already logged (a torn file, a bad session) stay logged across a reload.
        self.scheduler.remember_reported(reported or {})
        self.job: IngestJob | None = None
        self.dispatcher = Dispatcher(
            self.scheduler,
            self._run_job,
            catch_up=self._catch_up,
            finish=self._end_catch_up,
            housekeeping=self._housekeeping,
            background=self._background,
        )
        self.reflag: BackgroundReflag | None = None
        self.scrub = PendingScrub(self.logger)
        self._lost_lock = False
        self._info_lock = threading.Lock()
        self._last_ingest: str | None = None
        self._catch_up_total = 0
        self._catch_up_started = 0.0
        self._caught_up = False
        self._status = ""
        self.mirror: MirrorWorker | None = None

    # -- start and stop ----------------------------------------------------------------

    def start(self) -> None:
        settings = self.settings
        database = Database.open(self.context.paths.db)
        watched = [
            Watched(agent.source(root), SessionBook())
            for agent, root in enabled_roots(self.context.loaded, self.context.environ)
        ]
        self.job = IngestJob(
            host=self.dispatcher,
            sources=watched,
            db_path=self.context.paths.db,
            database=database,
            max_bytes=settings.max_bytes,
            keep_raw=settings.keep_raw,
            raw_copy_seconds=settings.raw_copy_seconds,
            caches=self.caches,
            logger=self.logger,
            on_ingested=self._ingested,
            exclusions=Exclusions.of(settings.exclude, str(self.context.paths.home)),
            mapping_processes=Processes.wanted(settings.ingest_processes),
        )
        changed: list[str] = []
        for each in watched:
            changed.extend(self._start_watching(each, database))
        # After the flag rules changed: re-flagged once capture runs (see ``capture.reflag``).
        self.reflag = BackgroundReflag.due(self.job, self.logger, self._report_reflag)
        if self.reflag is not None:
            self.dispatcher.run_background()
        watches = sum(len(running.watcher.watched_folders) for running in self.running if running.watcher)
        self.logger.debug(
            f"capture: debounce {settings.debounce_seconds:g} s, poll {settings.poll_seconds:g} s,"
            f" events {'on' if settings.use_events else 'off'}, full sweep every {settings.full_sweep_minutes:g} min,"
            f" files up to {settings.max_file_mb} MB, {watches} session folders watched"
        )
        self._catch_up_total = len(changed)
        self._catch_up_started = time.monotonic()
        self._caught_up = not changed
        progress = self.context.progress
        if progress is not None and self.first and changed:
            progress.start(len(changed))
        self.dispatcher.catch_up(changed)
        self.dispatcher.start()
        for running in self.running:
            running.poller.start()
        if settings.mirror_url is not None:
            self.mirror = start_mirror(
                mirror_target(settings.mirror_url),
                self.context.paths.db,
                self.context.paths.mirror_lock,
                self.logger,
                redact=settings.mirror_redact,
            )
        self._update_lock_info()

    def _start_watching(self, watched: Watched, database: Database) -> tuple[str, ...]:
        """Plan one root's catch-up, prime its poller and arm its watcher; returns the sessions
        to catch up."""
        settings = self.settings
        source, kind = watched.source, watched.kind
        watcher = None
        if settings.use_events:
            watcher = SessionWatcher(source, functools.partial(self._hint, watched), logger=self.logger)
        poller = Poller(
            source,
            watched.book,
            self.dispatcher,
            watcher,
            poll_seconds=settings.poll_seconds,
            full_sweep_seconds=settings.full_sweep_minutes * 60,
            logger=self.logger,
            on_sweep=self._sweep,
        )
        self.running.append(_Running(watched, poller, watcher))
        state = root_state(source.root)  # before listing: a folder created meanwhile is listed again
        if watcher is not None:
            watcher.sync(None if state is None else state[:2])  # events from here on are hints
        plan = plan_catch_up(source, database, wall_now=time.time(), keep_raw=settings.keep_raw)
        watched.book.load(plan)
        poller.prime(state if plan.root_found else None, plan.present, plan.skipped)
        if watcher is not None:
            for session_id in reversed(plan.watch_first[:MAX_FOLDER_WATCHES]):
                watcher.want(session_id)  # the sessions likely to change next, most recent last
            watcher.sync(None if state is None else state[:2])
        if not plan.root_found:
            self.logger.warning(f"{kind}: {source.root} does not exist yet; capture waits for it to appear")
        self.logger.info(watching_line(kind, source.root, len(plan.present), len(plan.changed)))
        return plan.changed

    def stop(self, grace: float | None = STOP_GRACE_SECONDS, *, hurry: Callable[[], bool] = lambda: False) -> bool:
        """Stop hints, let the ingest in progress finish (within ``grace`` seconds; None: however
        long it takes, unless ``hurry()`` turns true), close the store. False when the ingest did
        not finish in time."""
        # Copies left behind are taken within the same grace; the next start-up takes the rest.
        copies_until = time.monotonic() + (STOP_GRACE_SECONDS if grace is None else grace)
        for running in self.running:
            running.poller.stop()
        for running in self.running:
            if running.watcher is not None:
                running.watcher.stop()
        if self.mirror is not None:
            self.mirror.request_stop()  # it winds down while the ingest in progress finishes
        finished = wait_for_ingest(self.dispatcher.stop, grace=grace, hurry=hurry)
        if self.mirror is not None:
            self.mirror.stop(MIRROR_STOP_GRACE_SECONDS)  # what it did not mark done is pushed again
        if self.context.progress is not None:
            self.context.progress.finish()
        if finished and self.job is not None:
            if not self._lost_lock:  # another capture owns the store now
                self.job.copy_behind(everything=True, until=copies_until)
            self.job.close()
        return finished

    # -- the main thread's loop --------------------------------------------------------

    def serve(self, signals: Signals) -> Literal["stop", "reload", "failed"]:
        """Wait for a signal, pinging the service manager's watchdog; returns why it ended."""
        interval = self.notifier.watchdog_interval
        next_ping = 0.0
        while True:
            if signals.stop:
                return "stop"
            if signals.reload:
                signals.reload = False
                return "reload"
            if self._lost_lock:
                return "failed"
            if not (self.dispatcher.is_alive() and all(running.poller.is_alive() for running in self.running)):
                self.logger.error("capture: internal error: a worker thread stopped; exiting")
                return "failed"
            self._refresh_status()
            now = time.monotonic()
            if interval is not None and now >= next_ping:
                self.notifier.watchdog()
                next_ping = now + interval
            timeout = MAIN_TICK_SECONDS if interval is None else min(MAIN_TICK_SECONDS, max(next_ping - now, 0.01))
            signals.wait(timeout)
            signals.event.clear()

    @property
    def status_line(self) -> str:
        left, _ = self.dispatcher.snapshot()
        if left and self._catch_up_total:
            return f"catching up: {self._catch_up_total - left}/{self._catch_up_total} sessions"
        last = f"; last ingest {self._last_ingest}" if self._last_ingest else ""
        if len(self.running) == 1:
            (running,) = self.running
            return f"watching {len(running.watched.book)} sessions in {running.watched.source.root}{last}"
        roots = ", ".join(
            f"{len(running.watched.book)} {running.watched.kind} in {running.watched.source.root}"
            for running in self.running
        )
        return f"watching {self.sessions_watched} sessions ({roots}){last}"

    @property
    def sessions_watched(self) -> int:
        return sum(len(running.watched.book) for running in self.running)

    # -- callbacks from other threads --------------------------------------------------

    def _run_job(self, due: Due) -> tuple[float | None, bool]:
        assert self.job is not None
        result = self.job.run(due)
        return result.cost_seconds, result.resolved

    def _catch_up(self, session_ids: list[str], give_way: Callable[[], bool]) -> None:
        assert self.job is not None
        for session_id, result in self.job.startup.run(session_ids, give_way):
            self.dispatcher.caught_up(session_id, resolved=result.resolved)
            if self.context.progress is not None:
                self.context.progress.advance()
        left, _ = self.dispatcher.snapshot()
        if left == 0:
            self._caught_up_now()

    def _background(self, give_way: Callable[[], bool]) -> float | None:
        """On the ingest thread, when no live work and no catch-up is due: the re-flag goes on."""
        return None if self.reflag is None else self.reflag(give_way)

    def _report_reflag(self, progress: str | None) -> None:
        with self._info_lock:
            self.lock.update_reflag(progress)

    def _end_catch_up(self) -> None:
        """On the ingest thread as it stops, within the stop's grace: the catch-up's ingest processes end."""
        if self.job is not None:
            self.job.startup.close()

    def _sweep(self) -> None:
        self.caches.prune()
        self._give_back()

    def _caught_up_now(self) -> None:
        with self._info_lock:
            if self._caught_up:
                return
            self._caught_up = True
        elapsed = time.monotonic() - self._catch_up_started
        kinds = {running.watched.kind for running in self.running}
        who = kinds.pop() if len(kinds) == 1 else "capture"
        summary = f"{who}: caught up with {plural(self._catch_up_total, 'session')} in {elapsed:.1f} s"
        self._give_back()
        if self.context.progress is not None:
            self.context.progress.finish(lambda: self.logger.info(summary))
        else:
            self.logger.info(summary)

    def _housekeeping(self) -> None:
        """On the ingest thread, every few seconds: the store file and the lock file are still ours."""
        if self.job is not None:
            self.job.check_store()
            self.job.copy_behind()
            self.scrub.finish(self.job.database)  # one a forget could not finish
        with self._info_lock:
            if self.lock.info is None or self.lock.still_in_place():
                return
            try:
                self.lock.renew()
            except AlreadyRunning as exc:
                self.logger.error(f"capture: the capture lock was removed and {exc.reason}; stopping")
                self._lost_lock = True
                return
        self.logger.warning(f"capture: the capture lock {self.lock.path} was removed; took it again")

    def _hint(self, watched: Watched, session_id: str | None) -> None:
        """An event (watchdog's thread) under one root: a known session changed, or the poller
        should look."""
        running = next((running for running in self.running if running.watched is watched), None)
        if session_id is not None and session_id in watched.book:
            self.dispatcher.changed(session_id, "event")
            if running is not None and running.watcher is not None and running.watcher.needs_sync():
                running.poller.wake()  # a folder of the session appeared: watch it now, not at the next poll
            return
        if running is None:
            return  # still starting: the start-up plan sees it
        if session_id is not None and running.watcher is not None:
            running.watcher.want(session_id)  # a new folder: watch it, its files are coming
        running.poller.wake()

    def _ingested(self) -> None:
        if self.mirror is not None:
            self.mirror.wake()
        with self._info_lock:
            self._last_ingest = utc_now()
        self._update_lock_info()

    def _update_lock_info(self) -> None:
        with self._info_lock:
            self.lock.update(last_ingest=self._last_ingest, sessions_watched=self.sessions_watched)

    def _refresh_status(self) -> None:
        status = self.status_line
        if status != self._status:
            self._status = status
            self.notifier.status(status)
            if self.lock.info is not None and self.lock.info.sessions_watched != self.sessions_watched:
                self._update_lock_info()


def wait_for_ingest(join: Callable[[float | None], bool], *, grace: float | None, hurry: Callable[[], bool]) -> bool:
    """Wait for the ingest thread (``join(timeout)`` says whether it ended): ``grace`` seconds,
    or with None however long it takes until ``hurry()`` is true, then ``STOP_GRACE_SECONDS``."""
    if grace is not None:
        return join(grace)
    while not hurry():
        if join(HURRY_CHECK_SECONDS):
            return True
    return join(STOP_GRACE_SECONDS)
