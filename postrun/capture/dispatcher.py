"""The ingest thread: waits for the next due session (``Scheduler``) and runs its ingest, the
start-up catch-up a batch at a time, housekeeping, and background work (a re-flag) when
nothing else is due."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable

from postrun.capture.scheduler import Due, Reason, Scheduler

HOUSEKEEPING_SECONDS = 5.0
_HOUSEKEEPING = Due("", "poll")  # never a session: ids are never empty
_BACKGROUND = Due("", "event")


class Dispatcher:
    """The thin timer thread: waits for the next due session and runs its ingest.

    One worker: SQLite has one writer at a time anyway, and a single connection makes
    recovering from a replaced store file safe. Live work goes first (see ``Scheduler``)
    and pacing bounds what any one session can take, so sessions do not starve each other.
    Every call is thread-safe; hints from watcher and poller threads only take a lock.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        run: Callable[[Due], tuple[float | None, bool]],
        *,
        catch_up: Callable[[list[str], Callable[[], bool]], None],
        finish: Callable[[], None] = lambda: None,
        housekeeping: Callable[[], None] = lambda: None,
        background: Callable[[Callable[[], bool]], float | None] = lambda give_way: None,
        housekeeping_seconds: float = HOUSEKEEPING_SECONDS,
        name: str = "ingest",
    ) -> None:
        self.scheduler = scheduler
        self._run = run  # returns (cpu seconds or None when nothing was read, resolved)
        # Goes on with the catch-up of the sessions given, until the second argument says to
        # give way between two batches (see ``caught_up``).
        self._catch_up = catch_up
        self._finish = finish  # runs on this thread as it stops
        self._housekeeping = housekeeping  # runs on this thread between ingests, every few seconds
        self._housekeeping_seconds = housekeeping_seconds
        # Runs when nothing else is due (no live ingest, no catch-up), until the second argument
        # says to give way; returns None when it is over, else the seconds until its next part.
        self._background = background
        self._background_at: float | None = None  # when it may run next; None: nothing to run
        self._next_housekeeping = scheduler.clock.now() + housekeeping_seconds
        self._condition = threading.Condition()
        self._stopping = False
        self._busy: Due | None = None
        self._thread = threading.Thread(target=self._loop, name=f"postrun-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def changed(self, session_id: str, reason: Reason) -> None:
        with self._condition:
            # The worker wakes when the session is due: each event of a rewrite (several per
            # write) would wake it only to find nothing due yet.
            if self.scheduler.changed(session_id, reason):
                self._condition.notify()

    def run_background(self) -> None:
        """Start the background work (it runs once nothing else is due)."""
        with self._condition:
            self._background_at = self.scheduler.clock.now()
            self._condition.notify()

    def catch_up(self, session_ids: Iterable[str]) -> None:
        with self._condition:
            self.scheduler.catch_up(session_ids)
            self._condition.notify()

    def caught_up(self, session_id: str, *, resolved: bool) -> None:
        with self._condition:
            self.scheduler.caught_up(session_id, resolved=resolved)

    def retry_catch_up(self, delay: float) -> None:
        with self._condition:
            self.scheduler.retry_catch_up(delay)
            self._condition.notify()

    def retry_later(self, session_id: str, reason: Reason, delay: float) -> None:
        with self._condition:
            self.scheduler.retry_later(session_id, reason, delay)
            self._condition.notify()

    def reread(self, session_id: str) -> None:
        with self._condition:
            self.scheduler.reread(session_id)
            self._condition.notify()

    def forget(self, session_id: str) -> None:
        with self._condition:
            self.scheduler.forget(session_id)

    def report_once(self, session_id: str, problem: Hashable) -> bool:
        with self._condition:
            return self.scheduler.report_once(session_id, problem)

    def prune(self) -> None:
        with self._condition:
            self.scheduler.prune()

    def snapshot(self) -> tuple[int, Due | None]:
        """(sessions left to catch up, the ingest in progress)."""
        with self._condition:
            return self.scheduler.catching_up, self._busy

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float | None) -> bool:
        """Let the ingest in progress finish, then stop. False if it did not finish in ``timeout``."""
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        try:
            while self._work():
                pass
        finally:
            self._finish()

    def _work(self) -> bool:
        """Run the next piece of work (waiting for it); False when stopping."""
        with self._condition:
            due = self._next()
            if due is None:
                return False
            if due is _HOUSEKEEPING:
                self._next_housekeeping = self.scheduler.clock.now() + self._housekeeping_seconds
            elif due is _BACKGROUND:
                pass
            elif isinstance(due, Due):
                self._busy = due
        if due is _HOUSEKEEPING:
            self._housekeeping()
        elif due is _BACKGROUND:
            delay = self._background(self._give_way)
            with self._condition:
                self._background_at = None if delay is None else self.scheduler.clock.now() + delay
        elif isinstance(due, Due):
            self._run_due(due)
        else:
            self._catch_up(due, self._give_way)
        return True

    def _give_way(self) -> bool:
        """Between two batches of the catch-up: True when something else is to run now."""
        with self._condition:
            return self._stopping or self.scheduler.clock.now() >= self._next_housekeeping or self.scheduler.live_due()

    def _run_due(self, due: Due) -> None:
        cost: float | None = None
        resolved = False
        try:
            cost, resolved = self._run(due)
        finally:
            with self._condition:
                self._busy = None
                self.scheduler.finished(due, cost_seconds=cost, resolved=resolved)

    def _next(self) -> Due | list[str] | None:
        """Wait (holding the condition) until a session is due, the catch-up may go on (the
        sessions left), housekeeping or the background work is due; None when stopping."""
        while not self._stopping:
            now = self.scheduler.clock.now()
            if now >= self._next_housekeeping:
                return _HOUSEKEEPING
            due = self.scheduler.take()
            if due is not None:
                return due
            catch_up = self.scheduler.catch_up_now()
            if catch_up:
                return catch_up
            background = self._background_at if not self.scheduler.catching_up else None
            if background is not None and now >= background:
                return _BACKGROUND
            wakeups = [self._next_housekeeping, self.scheduler.next_wakeup(), background]
            wakeup = min(at for at in wakeups if at is not None)
            self._condition.wait(max(wakeup - now, 0.0))
        return None
