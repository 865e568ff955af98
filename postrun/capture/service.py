"""``postrun capture``: the start-up catch-up, the loop, signals, and the ingest of one session.

Threads: the main thread waits for signals and talks to the service manager (sd_notify);
one ingest thread (``Dispatcher``) runs every ingest, so the store has one connection and
one writer; the poll thread lists and stats; watchdog's threads turn events into hints.

Every ingest logs one line::

    cline <ingested|updated|unchanged> <id> (<N> steps, <T> turns, <W> written) on <startup|event|poll> in <ms> ms

A torn file logs, once per change::

    cline <id>: <messages|manifest> file not parseable yet (mid-write?); will retry on next change
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Literal, Protocol

from postrun.agents.cline import MappingCache, SessionLocation, session_fingerprint
from postrun.capture.book import SessionBook, plan_catch_up, print_key, skipped_line
from postrun.capture.clock import Clock, MonotonicClock
from postrun.capture.lock import CaptureLock
from postrun.capture.log import ProgressBar
from postrun.capture.notify import Notifier
from postrun.capture.poller import Poller, root_state
from postrun.capture.scheduler import Dispatcher, Due, Reason, Scheduler
from postrun.capture.watcher import MAX_FOLDER_WATCHES, SessionWatcher
from postrun.errors import AlreadyRunning, NotParseableYet, PostrunError, StoreError
from postrun.ingest import Ingester
from postrun.paths import Paths, ensure_private_dir
from postrun.settings import LoadedSettings, Settings
from postrun.store.db import Database
from postrun.text import plural
from postrun.timestamps import utc_now

STOP_GRACE_SECONDS = 4.0  # SIGTERM: the ingest in progress gets this long (exit within 5 s)
CACHE_LIMIT = 8  # mapping caches kept for the most recently changed sessions
CACHE_IDLE_SECONDS = 300.0  # and dropped after this long without a change
STORE_RETRY_FIRST_SECONDS = 2.0
STORE_RETRY_MAX_SECONDS = 60.0
MAIN_TICK_SECONDS = 1.0

Outcome = Literal["ingested", "updated", "unchanged", "torn", "failed", "store", "skipped", "gone"]


@dataclass(frozen=True, slots=True)
class JobResult:
    outcome: Outcome
    cost_seconds: float | None = None  # CPU time of the ingest; None when nothing was read

    @property
    def resolved(self) -> bool:
        return self.outcome in ("ingested", "updated", "unchanged")


class JobHost(Protocol):
    """What an ingest needs from whoever schedules it."""

    def report_once(self, session_id: str, problem: Hashable) -> bool: ...

    def retry_later(self, session_id: str, reason: Reason, delay: float) -> None: ...

    def catch_up(self, session_ids: Iterable[str]) -> None: ...


class MappingCaches:
    """The mapping caches of the few sessions that change right now (bounded, idle ones dropped)."""

    def __init__(self, clock: Clock, *, limit: int = CACHE_LIMIT, idle_seconds: float = CACHE_IDLE_SECONDS) -> None:
        self.clock = clock
        self.limit = limit
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._caches: OrderedDict[str, tuple[MappingCache, float]] = OrderedDict()

    def get(self, session_id: str) -> MappingCache | None:
        with self._lock:
            entry = self._caches.get(session_id)
            return None if entry is None else entry[0]

    def put(self, session_id: str, cache: MappingCache) -> None:
        with self._lock:
            self._caches[session_id] = (cache, self.clock.now())
            self._caches.move_to_end(session_id)
            while len(self._caches) > self.limit:
                self._caches.popitem(last=False)

    def prune(self) -> None:
        cutoff = self.clock.now() - self.idle_seconds
        with self._lock:
            for session_id in [s for s, (_, used) in self._caches.items() if used < cutoff]:
                del self._caches[session_id]

    def clear(self) -> None:
        with self._lock:
            self._caches.clear()


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


class IngestJob:
    """Ingests one session when the scheduler says so. Runs on one thread at a time.

    Nothing is read when the session's fingerprints are those of its last read; the
    store's file identity is checked before each ingest (a removed store is recreated
    and caught up); a torn file or a bad session is reported once per change.
    """

    def __init__(
        self,
        *,
        root: Path,
        db_path: Path,
        database: Database,
        max_bytes: int,
        book: SessionBook,
        caches: MappingCaches,
        logger: logging.Logger,
        on_ingested: Callable[[], None] = lambda: None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.db_path = db_path
        self.database: Database | None = database
        self.max_bytes = max_bytes
        self.ingester = Ingester(database, max_bytes=max_bytes)
        self.book = book
        self.caches = caches
        self.logger = logger
        self.on_ingested = on_ingested
        self.wall = wall
        self.faults = StoreFaults(db_path, logger)
        self.host: JobHost | None = None
        self.reads = 0  # sessions actually read (for tests and status)

    def run(self, due: Due) -> JobResult:
        assert self.host is not None
        session_id = due.session_id
        location = SessionLocation.in_root(self.root, session_id)
        try:
            files = session_fingerprint(location)
        except PostrunError as exc:
            return self._failed(session_id, ("stat", str(exc)), str(exc), None)
        if not files or files[0].path != str(location.messages):
            self.logger.debug(f"cline {session_id}: no messages file any more; stored data kept")
            return JobResult("gone")
        if not self._store_ready(due):
            return JobResult("store")
        key = print_key(files)
        if self.book.was_read_at(session_id, key):
            self.logger.debug(f"cline {session_id}: not read: files unchanged since the last read (on {due.reason})")
            return JobResult("skipped")
        assert self.database is not None
        started = time.thread_time()
        self.reads += 1
        try:
            outcome, cache = self.ingester.ingest(location, self.caches.get(session_id))
        except NotParseableYet as exc:
            cost = time.thread_time() - started
            self.book.read(session_id, key)
            # Once per change of the torn file itself: a touched manifest next to a torn
            # messages file is read again, but the same tear is not news.
            torn = next(((f.path, f.size, f.mtime_ns, f.ino) for f in files if f.path == exc.where), key)
            if self.host.report_once(session_id, ("torn", exc.kind, torn)):
                self.logger.info(
                    f"cline {session_id}: {exc.kind} file not parseable yet (mid-write?); will retry on next change"
                )
            else:
                self.logger.debug(f"cline {session_id}: {exc.kind} file still not parseable (already reported)")
            return JobResult("torn", cost)
        except StoreError as exc:
            self.host.retry_later(session_id, due.reason, self.faults.failed(exc))
            return JobResult("store", time.thread_time() - started)
        except PostrunError as exc:
            return self._failed(session_id, ("failed", key), str(exc), key, time.thread_time() - started)
        except Exception as exc:  # one bad session must never stop the capture
            detail = f"internal error: {type(exc).__name__}: {exc}"
            self.logger.debug(f"cline {session_id}: {detail}", exc_info=True)
            return self._failed(session_id, ("failed", key), detail, key, time.thread_time() - started)
        cost = time.thread_time() - started
        self.faults.succeeded()
        self.book.read(session_id, key, is_open=outcome.open)
        if due.reason != "startup" or outcome.open:
            self.caches.put(session_id, cache)  # it is likely to change again soon
        self.logger.info(
            f"cline {outcome.status} {session_id} ({outcome.steps} steps, {outcome.turns} turns,"
            f" {outcome.rows_written} written) on {due.reason} in {round(outcome.elapsed_ms)} ms"
        )
        self.on_ingested()
        return JobResult(outcome.status, cost)

    def _failed(
        self, session_id: str, problem: Hashable, message: str, key: int | None, cost: float | None = None
    ) -> JobResult:
        assert self.host is not None
        if key is not None:
            self.book.read(session_id, key)  # retried on the next change, not on every poll
        if self.host.report_once(session_id, problem):
            self.logger.error(f"cline {session_id}: {message}")
        return JobResult("failed", cost)

    def check_store(self) -> None:
        """Housekeeping between ingests: notice a removed store even when nothing changes."""
        self._store_ready(None)

    def _store_ready(self, due: Due | None) -> bool:
        """Check the store file's identity before the transaction; recreate it if it went away."""
        assert self.host is not None
        if self.database is not None and not self.database.identity_changed():
            return True
        if self.database is not None:
            self.logger.error(
                f"store {self.db_path}: the database file was removed or replaced; recreating it and catching up"
            )
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
        self.ingester = Ingester(database, max_bytes=self.max_bytes)
        self.caches.clear()
        self.book.forget_reads()
        plan = plan_catch_up(self.root, database, wall_now=self.wall())
        self.book.load(plan)
        self.host.catch_up(plan.changed)
        self.logger.info(f"cline: catching up {len(plan.changed)} sessions into the new store")
        return True

    def close(self) -> None:
        if self.database is not None:
            self.database.close()
            self.database = None


class Signals:
    """SIGTERM/SIGINT ask to stop, SIGHUP to re-read the configuration (main thread only)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.stop = False
        self.reload = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for number, handler in (
            (signal.SIGTERM, self._on_stop),
            (signal.SIGINT, self._on_stop),
            (signal.SIGHUP, self._on_reload),
        ):
            self._previous[number] = signal.signal(number, handler)

    def restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def wait(self, timeout: float) -> None:
        self.event.wait(timeout)

    def _on_stop(self, _number: int, _frame: FrameType | None) -> None:
        self.stop = True
        self.event.set()

    def _on_reload(self, _number: int, _frame: FrameType | None) -> None:
        self.reload = True
        self.event.set()


@dataclass
class OnceSummary:
    present: int = 0
    ingested: int = 0
    updated: int = 0
    unchanged: int = 0
    torn: int = 0
    failed: int = 0
    elapsed_ms: float = 0.0

    def line(self) -> str:
        return (
            f"summary: {self.present} sessions, {self.ingested} ingested, {self.updated} updated,"
            f" {self.unchanged} unchanged, {self.torn} torn, {self.failed} failed in {round(self.elapsed_ms)} ms"
        )

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

    def catch_up(self, session_ids: Iterable[str]) -> None:
        return None


@dataclass
class CaptureContext:
    """Everything a capture run needs that is decided outside it (so tests and --daemon can build one)."""

    loaded: LoadedSettings
    paths: Paths
    environ: Mapping[str, str]
    logger: logging.Logger
    progress: ProgressBar | None = None
    reload: Callable[[], LoadedSettings] | None = None
    on_ready: Callable[[int], None] = lambda pid: None
    set_log_level: Callable[[str], None] = lambda level: None
    clock: Clock = field(default_factory=MonotonicClock)

    @property
    def settings(self) -> Settings:
        return self.loaded.settings


def watching_line(root: Path, present: int, changed: int) -> str:
    """The start-up line issue 3 fixes, for ``--once`` too (scripts look for it)."""
    return f"cline: watching {root} ({present} sessions present, {changed} new or changed)"


def _capture_lock(paths: Paths) -> CaptureLock:
    """The store's capture lock, in the store's folder (created private if missing)."""
    try:
        ensure_private_dir(paths.data_dir)
    except OSError as exc:
        raise StoreError(str(paths.data_dir), f"cannot create the store's folder ({exc.strerror or exc})") from None
    return CaptureLock(paths.capture_lock, db=paths.db)


def run_once(context: CaptureContext, signals: Signals | None = None) -> OnceSummary:
    """The start-up pass alone: ingest what is new or changed, then return the tally."""
    settings, logger = context.settings, context.logger
    started = time.monotonic()
    with _capture_lock(context.paths):
        job = IngestJob(
            root=settings.cline_dir,
            db_path=context.paths.db,
            database=Database.open(context.paths.db),
            max_bytes=settings.max_bytes,
            book=SessionBook(),
            caches=MappingCaches(context.clock, limit=0),
            logger=logger,
        )
        job.host = _OnceHost()
        progress = context.progress
        try:
            assert job.database is not None
            plan = plan_catch_up(settings.cline_dir, job.database, wall_now=time.time())
            if not plan.root_found:
                logger.warning(f"cline: {settings.cline_dir} does not exist; nothing to ingest")
            for entry in plan.skipped:
                if entry.warn:
                    logger.warning(skipped_line(entry))
            logger.info(watching_line(settings.cline_dir, len(plan.present), len(plan.changed)))
            job.book.load(plan)
            summary = OnceSummary(present=len(plan.present), unchanged=len(plan.unchanged))
            if progress is not None and plan.changed:
                progress.start(len(plan.changed))
            for session_id in plan.changed:
                if signals is not None and signals.stop:
                    logger.info("capture: interrupted; the sessions not read yet are read on the next run")
                    break
                summary.count(job.run(Due(session_id, "startup")).outcome)
                if progress is not None:
                    progress.advance()
        finally:
            if progress is not None:
                progress.finish()
            job.close()
    summary.elapsed_ms = (time.monotonic() - started) * 1000
    return summary


class CaptureService:
    """One configuration's worth of capture: built at start and again after SIGHUP."""

    def __init__(
        self,
        context: CaptureContext,
        lock: CaptureLock,
        *,
        notifier: Notifier,
        first: bool,
        reported: dict[str, Hashable] | None = None,
    ) -> None:
        self.context = context
        self.settings = context.settings
        self.root = self.settings.cline_dir
        self.logger = context.logger
        self.lock = lock
        self.notifier = notifier
        self.first = first
        self.book = SessionBook()
        self.caches = MappingCaches(context.clock)
        self.scheduler = Scheduler(context.clock, debounce_seconds=self.settings.debounce_seconds)
        # Problems already logged (a torn file, a bad session) stay logged across a reload.
        self.scheduler.remember_reported(reported or {})
        self.job: IngestJob | None = None
        self.dispatcher = Dispatcher(self.scheduler, self._run_job, housekeeping=self._housekeeping)
        self._lost_lock = False
        self.watcher: SessionWatcher | None = None
        self.poller: Poller | None = None
        self._info_lock = threading.Lock()
        self._last_ingest: str | None = None
        self._catch_up_total = 0
        self._catch_up_started = 0.0
        self._caught_up = False
        self._status = ""

    # -- start and stop ----------------------------------------------------------------

    def start(self) -> None:
        settings = self.settings
        database = Database.open(self.context.paths.db)
        self.job = IngestJob(
            root=self.root,
            db_path=self.context.paths.db,
            database=database,
            max_bytes=settings.max_bytes,
            book=self.book,
            caches=self.caches,
            logger=self.logger,
            on_ingested=self._ingested,
        )
        self.job.host = self.dispatcher
        if settings.use_events:
            self.watcher = SessionWatcher(self.root, self._hint, logger=self.logger)
        self.poller = Poller(
            self.root,
            self.book,
            self.dispatcher,
            self.watcher,
            poll_seconds=settings.poll_seconds,
            full_sweep_seconds=settings.full_sweep_minutes * 60,
            logger=self.logger,
            on_sweep=self.caches.prune,
        )
        state = root_state(self.root)  # before listing: a folder created meanwhile is listed again
        if self.watcher is not None:
            self.watcher.sync(None if state is None else state[:2])  # events from here on are hints
        plan = plan_catch_up(self.root, database, wall_now=time.time())
        self.book.load(plan)
        self.poller.prime(state if plan.root_found else None, plan.present, plan.skipped)
        if self.watcher is not None:
            for session_id in reversed(plan.watch_first[:MAX_FOLDER_WATCHES]):
                self.watcher.want(session_id)  # the sessions likely to change next, most recent last
            self.watcher.sync(None if state is None else state[:2])
        if not plan.root_found:
            self.logger.warning(f"cline: {self.root} does not exist yet; capture waits for it to appear")
        self.logger.info(watching_line(self.root, len(plan.present), len(plan.changed)))
        self.logger.debug(
            f"capture: debounce {settings.debounce_seconds:g} s, poll {settings.poll_seconds:g} s,"
            f" events {'on' if settings.use_events else 'off'}, full sweep every {settings.full_sweep_minutes:g} min,"
            f" files up to {settings.max_file_mb} MB, {len(self.watcher.watched_folders) if self.watcher else 0}"
            " session folders watched"
        )
        self._catch_up_total = len(plan.changed)
        self._catch_up_started = time.monotonic()
        self._caught_up = not plan.changed
        progress = self.context.progress
        if progress is not None and self.first and plan.changed:
            progress.start(len(plan.changed))
        self.dispatcher.catch_up(plan.changed)
        self.dispatcher.start()
        self.poller.start()
        self._update_lock_info()

    def stop(self, grace: float | None = STOP_GRACE_SECONDS) -> bool:
        """Stop hints, let the ingest in progress finish (within ``grace`` seconds; None: however
        long it takes), close the store. False when the ingest did not finish in time."""
        if self.poller is not None:
            self.poller.stop()
        if self.watcher is not None:
            self.watcher.stop()
        finished = self.dispatcher.stop(grace)
        if self.context.progress is not None:
            self.context.progress.finish()
        if finished and self.job is not None:
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
            if not (self.dispatcher.is_alive() and self.poller is not None and self.poller.is_alive()):
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
        return f"watching {len(self.book)} sessions in {self.root}{last}"

    # -- callbacks from other threads --------------------------------------------------

    def _run_job(self, due: Due) -> tuple[float | None, bool]:
        assert self.job is not None
        result = self.job.run(due)
        if due.reason == "startup":
            if self.context.progress is not None:
                self.context.progress.advance()
            left, _ = self.dispatcher.snapshot()
            if left == 0:
                self._caught_up_now()
        return result.cost_seconds, result.resolved

    def _caught_up_now(self) -> None:
        with self._info_lock:
            if self._caught_up:
                return
            self._caught_up = True
        if self.context.progress is not None:
            self.context.progress.finish()
        elapsed = time.monotonic() - self._catch_up_started
        self.logger.info(f"cline: caught up with {plural(self._catch_up_total, 'session')} in {elapsed:.1f} s")

    def _housekeeping(self) -> None:
        """On the ingest thread, every few seconds: the store file and the lock file are still ours."""
        if self.job is not None:
            self.job.check_store()
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

    def _hint(self, session_id: str | None) -> None:
        """An event (watchdog's thread): a known session changed, or the poller should look."""
        if session_id is not None and session_id in self.book:
            self.dispatcher.changed(session_id, "event")
            return
        if session_id is not None and self.watcher is not None:
            self.watcher.want(session_id)  # a new folder: watch it, its files are coming
        if self.poller is not None:
            self.poller.wake()

    def _ingested(self) -> None:
        with self._info_lock:
            self._last_ingest = utc_now()
        self._update_lock_info()

    def _update_lock_info(self) -> None:
        with self._info_lock:
            self.lock.update(last_ingest=self._last_ingest, sessions_watched=len(self.book))

    def _refresh_status(self) -> None:
        status = self.status_line
        if status != self._status:
            self._status = status
            self.notifier.status(status)
            if self.lock.info is not None and self.lock.info.sessions_watched != len(self.book):
                self._update_lock_info()


def run_capture(context: CaptureContext, signals: Signals) -> int:
    """Capture in the foreground until SIGTERM/SIGINT; SIGHUP re-reads the configuration.

    Raises AlreadyRunning (exit 75) when another capture holds the store, StoreError when the
    store cannot be opened at start. Returns the exit code.
    """
    notifier = Notifier(context.environ, pid=os.getpid())
    lock = _capture_lock(context.paths)
    lock.acquire()
    try:
        service = _started(CaptureService(context, lock, notifier=notifier, first=True))
        context.on_ready(os.getpid())
        notifier.ready(service.status_line)
        while True:
            ended = service.serve(signals)
            if ended == "reload":
                reloaded = _reloaded(context)
                if reloaded is None:
                    continue  # nothing to apply: the running service goes on as it was
                notifier.reloading()
            else:
                notifier.stopping()
                context.logger.info("capture: stopping")
            # A reload waits for the ingest in progress however long it takes; a stop waits a
            # few seconds, then leaves without it (SQLite rolls an unfinished write back).
            if not service.stop(None if ended == "reload" else STOP_GRACE_SECONDS):
                context.logger.warning(
                    "capture: stopped without waiting for the ingest in progress (redone next start)"
                )
                logging.shutdown()
                os._exit(0)  # the ingest thread still uses the store: no clean interpreter exit
            if ended == "failed":
                return 1
            if ended == "stop":
                context.logger.info("capture: stopped")
                return 0
            assert reloaded is not None
            context = reloaded
            reported = service.scheduler.reported_problems()
            service = _started(CaptureService(context, lock, notifier=notifier, first=False, reported=reported))
            notifier.send("READY=1", f"STATUS={service.status_line}")
    finally:
        if lock.info is not None:
            lock.release()


def _started(service: CaptureService) -> CaptureService:
    try:
        service.start()
    except BaseException:
        service.stop()
        raise
    return service


def _reloaded(context: CaptureContext) -> CaptureContext | None:
    """The context with the configuration read again (SIGHUP); None when there is nothing to
    apply: the file is broken (the previous configuration stays) or nothing changed."""
    logger = context.logger
    if context.reload is None:
        return None
    try:
        loaded = context.reload()
    except PostrunError as exc:
        logger.error(f"capture: configuration not reloaded: {exc}; keeping the previous one")
        return None
    for warning in loaded.warnings:
        logger.warning(warning)
    settings = loaded.settings
    if settings.db != context.settings.db:
        logger.warning(
            f"capture: the store cannot change while capture runs; still using {context.settings.db}"
            " (restart capture to switch)"
        )
        settings = settings.model_copy(update={"db": context.settings.db})
        loaded = LoadedSettings(settings, loaded.config_path, loaded.config_found, loaded.sources, loaded.warnings)
    source = str(loaded.config_path) if loaded.config_found else f"{loaded.config_path} (absent: defaults)"
    if settings == context.settings:
        logger.info(f"capture: configuration re-read from {source}; nothing changed")
        return None
    context.set_log_level(settings.log_level)
    logger.info(f"capture: configuration reloaded from {source}")
    return CaptureContext(
        loaded=loaded,
        paths=Paths.from_settings(settings, context.environ, config_file=loaded.config_path),
        environ=context.environ,
        logger=logger,
        progress=None,
        reload=context.reload,
        on_ready=context.on_ready,
        set_log_level=context.set_log_level,
        clock=context.clock,
    )
