"""``postrun capture`` until stopped: the capture lock, ready and status for the service
manager, and a new ``Capture`` after each configuration reload (SIGHUP)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from postrun.capture.context import CaptureContext, capture_lock
from postrun.capture.loop import STOP_GRACE_SECONDS, Capture
from postrun.capture.notify import Notifier
from postrun.capture.reload import reloaded_context
from postrun.capture.signals import Signals
from postrun.errors import PostrunError


def run_capture(context: CaptureContext, signals: Signals) -> int:
    """Capture in the foreground until SIGTERM/SIGINT; SIGHUP re-reads the configuration.

    Raises AlreadyRunning (exit 75) when another capture holds the store, StoreError when the
    store cannot be opened at start. Returns the exit code.
    """
    notifier = Notifier(context.environ, pid=os.getpid())
    lock = capture_lock(context.paths)
    lock.acquire()
    try:
        capture = _started(Capture(context, lock, notifier=notifier, first=True))
        context.on_ready(os.getpid())
        notifier.ready(capture.status_line)
        while True:
            ended = capture.serve(signals)
            if ended == "reload":
                reloaded = reloaded_context(context)
                if reloaded is None:
                    continue  # nothing to apply: the running capture goes on as it was
                notifier.reloading()
            else:
                notifier.stopping()
                context.logger.info("capture: stopping")
            # A reload waits for the ingest in progress however long it takes, unless a stop
            # comes meanwhile; a stop waits a few seconds, then leaves without it (SQLite
            # rolls an unfinished write back).
            grace = None if ended == "reload" else STOP_GRACE_SECONDS
            if not capture.stop(grace, hurry=watchdog_fed(notifier, lambda: signals.stop)):
                context.logger.warning(
                    "capture: stopped without waiting for the ingest in progress (redone next start)"
                )
                logging.shutdown()
                os._exit(0)  # the ingest thread still uses the store: no clean interpreter exit
            if ended == "failed":
                return 1
            if ended == "stop" or signals.stop:
                if ended == "reload":
                    notifier.stopping()
                context.logger.info("capture: stopped")
                return 0
            assert reloaded is not None
            reported = capture.scheduler.reported_problems()
            try:
                capture = _started(Capture(reloaded, lock, notifier=notifier, first=False, reported=reported))
            except PostrunError as exc:
                # The new root was listable a moment ago: it changed meanwhile. Capture goes on
                # with what worked; a failure of that too is a real failure (exit 1).
                context.logger.error(f"capture: configuration not applied: {exc}; back to the previous one")
                context.set_log_level(context.settings.log_level)
                capture = _started(Capture(context, lock, notifier=notifier, first=False, reported=reported))
            else:
                context = reloaded
            notifier.send("READY=1", f"STATUS={capture.status_line}")
    finally:
        if lock.info is not None:
            lock.release()


def watchdog_fed(notifier: Notifier, stop: Callable[[], bool]) -> Callable[[], bool]:
    """``stop``, pinging the service manager's watchdog when due each time it is asked: a reload
    waits for the ingest in progress however long it takes (README), and systemd kills a
    service whose pings stop for WatchdogSec."""
    next_ping = 0.0

    def hurry() -> bool:
        nonlocal next_ping
        interval, now = notifier.watchdog_interval, time.monotonic()
        if interval is not None and now >= next_ping:
            notifier.watchdog()
            next_ping = now + interval
        return stop()

    return hurry


def _started(capture: Capture) -> Capture:
    try:
        capture.start()
    except BaseException:
        capture.stop()
        raise
    return capture
