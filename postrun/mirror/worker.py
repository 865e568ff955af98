"""The mirror inside ``postrun capture``: a thread of its own that drains the outbox.

Recording never waits for it: it has its own store connection, holds no store transaction
while it talks to PostgreSQL, and ingest only sets an event to wake it. While the server is
down, unreachable, read-only or refuses the login it logs one line per reason::

    mirror <host>/<db>: <reason>; <N> sessions waiting

retries after a delay that doubles up to 60 s, and logs ``mirror <host>/<db>: caught up``
when nothing is waiting any more (after start, or after a failure). A session the server
refuses (the others are pushed) is logged once per reason::

    mirror <host>/<db>: session <id>: <reason>; kept queued

and tried again every 60 s (not at every change of another session: it may be large).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from postrun.errors import AlreadyRunning, PostrunError
from postrun.mirror.push import Pushed, Pusher, local_origin, push_lock
from postrun.mirror.reconcile import describe_drift
from postrun.mirror.target import MirrorTarget
from postrun.store import outbox
from postrun.store.db import Database
from postrun.text import plural

RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0
# Other processes (`postrun ingest`, `forget`) queue sessions too: look this often.
POLL_SECONDS = 2.0


class MirrorWorker:
    def __init__(
        self,
        target: MirrorTarget,
        db_path: Path,
        lock_path: Path,
        logger: logging.Logger,
        *,
        poll_seconds: float = POLL_SECONDS,
        retry_first: float = RETRY_FIRST_SECONDS,
        retry_max: float = RETRY_MAX_SECONDS,
        open_pusher: Callable[[Database], Pusher] | None = None,
        redact: bool = True,
    ) -> None:
        self.target = target
        self.db_path = db_path
        self.lock_path = lock_path
        self.logger = logger
        self.poll_seconds = poll_seconds
        self.retry_first = retry_first
        self.retry_max = retry_max
        self.open_pusher = open_pusher or (
            lambda database: Pusher(target, database, local_origin(database), redact=redact)
        )
        self.where = f"mirror {target.label}"
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._pusher: Pusher | None = None
        self._refused: dict[str, tuple[str, float]] = {}  # session -> (reason, when last tried)
        self._thread = threading.Thread(target=self._run, name="mirror", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """A session was stored: push it now (unless the mirror is waiting to retry)."""
        self._wake.set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def request_stop(self) -> None:
        """Stop after the batch in progress; a statement running is cancelled."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._wake.set()
        pusher = self._pusher
        if pusher is not None:
            pusher.cancel()

    def stop(self, grace: float) -> bool:
        """``request_stop``, then wait; False when the thread did not end within ``grace``
        seconds (it is a daemon thread: what it did not mark done is pushed again later)."""
        self.request_stop()
        self._thread.join(grace)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            with Database.open(self.db_path) as database:
                self._serve(database)
        except PostrunError as exc:
            self.logger.error(f"{self.where}: {exc}; the mirror stops until capture restarts")
        except Exception as exc:
            self.logger.error(f"{self.where}: internal error: {type(exc).__name__}: {exc}; the mirror stops")
            self.logger.debug("mirror internal error", exc_info=True)

    def _serve(self, database: Database) -> None:
        pusher = self._pusher = self.open_pusher(database)
        failing: str | None = None
        delay = self.retry_first
        behind = True  # until the first drain that leaves nothing waiting
        try:
            while not self._stopping.is_set():
                self._wake.clear()
                try:
                    with push_lock(self.lock_path):
                        pushed = pusher.drain(stop=self._stopping.is_set, skip=self._resting())
                except AlreadyRunning:
                    # `postrun mirror push` holds the store's push lock: it is pushing for us.
                    self._stopping.wait(self.retry_first)
                    continue
                except PostrunError as exc:
                    pusher.disconnect()
                    if exc.reason != failing:
                        waiting = _waiting(database)
                        self.logger.error(f"{self.where}: {exc.reason}; {plural(waiting, 'session')} waiting")
                    else:
                        self.logger.debug(f"{self.where}: still failing: {exc.reason}")
                    failing, behind = exc.reason, True
                    self._stopping.wait(delay)  # a wake does not cut the retry delay short
                    delay = min(delay * 2, self.retry_max)
                    continue
                _say_drift(self.logger, self.where, pusher)
                self._say_refused(pushed)
                if pushed.sessions:
                    self.logger.debug(f"{self.where}: pushed {plural(pushed.sessions, 'session')}")
                if behind and not self._stopping.is_set() and _waiting(database) == 0:
                    self.logger.info(f"{self.where}: caught up")
                    behind = False
                failing, delay = None, self.retry_first
                self._wake.wait(self.poll_seconds)
        finally:
            self._pusher = None
            pusher.disconnect()

    def _resting(self) -> frozenset[str]:
        """The refused sessions not to try again yet (tried less than ``retry_max`` ago)."""
        now = time.monotonic()
        return frozenset(sid for sid, (_, tried) in self._refused.items() if now - tried < self.retry_max)

    def _say_refused(self, pushed: Pushed) -> None:
        """Log each session the server refused, once per reason."""
        now = time.monotonic()
        for entry in pushed.refused:
            if self._refused.get(entry.session_id, ("", 0.0))[0] != entry.reason:
                self.logger.error(f"{self.where}: session {entry.session_id}: {entry.reason}; kept queued")
            self._refused[entry.session_id] = (entry.reason, now)


def _say_drift(logger: logging.Logger, where: str, pusher: Pusher) -> None:
    """Once per connection: what it found the mirror lacking or holding otherwise."""
    found, pusher.drifted = pusher.drifted, None
    if found is not None and found.sessions:
        logger.info(f"{where}: {describe_drift(found)}; sent again")


def _waiting(database: Database) -> int:
    return outbox.backlog(database).sessions
