"""When to ingest each session: trailing debounce, a maximum wait, pacing, one ingest at a time.

A pure state machine on an injected clock. Hints (``changed``) come from the watcher and
the poller, ``take`` hands out the next session whose time has come, ``finished`` reports
what it cost. Nothing here reads files or sleeps: ``postrun.capture.dispatcher`` is the
thin thread that waits for the next due time and runs the ingests.

The rules:

- A session is ingested ``debounce_seconds`` after its last change, but never later
  than ``burst_debounces`` debounces after the first change of a burst: a session written
  about every debounce (Cline adding a message every 2 s) never has a quiet spell, and
  waiting for one held its writes back for up to the maximum wait. That cap still waits
  until the files have been quiet for ``SETTLE_SECONDS`` (at most that much longer): a
  change seen a moment ago is likely a write under way, and Cline rewrites its file whole,
  so a read in the middle of it is torn.
- A read that caught a file mid-write is made again ``SETTLE_SECONDS`` after the last change
  seen (events are only hints: with none, that long after the read), not a debounce after
  the next change: its writer was finishing the change the read was for, and the next one
  may be a burst away. Files that never go quiet are read at the burst's cap, as above.
- Pacing: a session whose live ingests cost C CPU seconds is not ingested more often
  than every C / ``cpu_share`` seconds, but never later than ``max_wait_seconds`` after
  the first change of a burst. Start-up
  catch-up ingests do not count, so a session just caught up still updates within the
  debounce.
- One session is never ingested twice at once; a change while it runs makes it due
  again afterwards.
- Live work (events, polls) goes before the start-up catch-up, so a session being
  worked on does not wait behind thousands of old ones: the catch-up is stored a batch
  at a time, and gives way to due live work between two batches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from postrun.capture.clock import Clock

Reason = Literal["startup", "event", "poll"]

BURST_DEBOUNCES = 2.0  # a burst waits at most this many debounces, unless pacing holds it back
SETTLE_SECONDS = 0.25  # how long files must be quiet before a read at the burst's cap or after a torn read
MAX_WAIT_SECONDS = 60.0  # pacing holds a burst back at most this long
CPU_SHARE = 0.01  # pacing: at most 1 % of a core per session
COST_WINDOW = 4  # pacing uses the mean cost of this many recent live ingests
FORGET_AFTER_SECONDS = 600.0  # a session idle this long starts again unpaced
# Problems logged per session until it is stored whole, the most recently met kept: a read may
# meet several (sub-agents caught mid-line), each logged once, not again at every read while
# they last. A session is kept in memory while it has any (one entry per problem session).
REPORTED_KEPT = 32


@dataclass(frozen=True, slots=True)
class Due:
    session_id: str
    reason: Reason


@dataclass(slots=True)
class _Session:
    first_change: float | None = None  # start of the pending burst; None when not pending
    last_change: float = 0.0
    reason: Reason = "event"
    not_before: float = 0.0  # a retry after a fault of the store
    running: bool = False
    started: float = 0.0
    live_started: float | None = None  # when the last live ingest began
    costs: deque[float] = field(default_factory=lambda: deque(maxlen=COST_WINDOW))
    reported: tuple[Hashable, ...] = ()  # the problems logged, newest last, so each is logged once per change
    mid_write: bool = False  # the last read caught a file mid-write: read again once it settles
    unhinted: bool = False  # pending for that alone, no hint since: the next hint names the reason


class Scheduler:
    """The per-session timing rules. Not thread-safe: ``Dispatcher`` serializes access."""

    def __init__(
        self,
        clock: Clock,
        *,
        debounce_seconds: float,
        max_wait_seconds: float = MAX_WAIT_SECONDS,
        cpu_share: float = CPU_SHARE,
    ) -> None:
        self.clock = clock
        self.debounce = debounce_seconds
        self.burst = BURST_DEBOUNCES * debounce_seconds
        self.settle = min(SETTLE_SECONDS, debounce_seconds)
        self.max_wait = max_wait_seconds
        self.cpu_share = cpu_share
        self._sessions: dict[str, _Session] = {}
        self._pending: set[str] = set()
        self._startup: dict[str, None] = {}  # an ordered set: catch-up in listing order
        self._startup_not_before = 0.0  # a retry of the catch-up after a fault of the store

    # -- hints -------------------------------------------------------------------------

    def changed(self, session_id: str, reason: Reason) -> bool:
        """Something about the session changed (or may have: events are only hints). True when
        it was not pending: a change of a pending session only makes it due later, never sooner."""
        state = self._sessions.setdefault(session_id, _Session())
        now = self.clock.now()
        if state.first_change is not None and reason == "poll":
            # A poll only discovers a change; the pending ingest reads the latest files anyway,
            # and letting each poll push the debounce would delay it by up to poll_seconds.
            return False
        state, began = self._pend(session_id, reason, now)
        if state.unhinted:
            state.reason = reason
            state.unhinted = False
        state.last_change = now
        return began

    def catch_up(self, session_ids: Iterable[str]) -> None:
        """Ingest these sessions as soon as the worker is free (start-up; after the store was recreated)."""
        for session_id in session_ids:
            self._startup[session_id] = None

    def retry_catch_up(self, delay: float) -> None:
        """Go on with the catch-up after ``delay`` (the store was locked or full)."""
        self._startup_not_before = self.clock.now() + delay

    def retry_later(self, session_id: str, reason: Reason, delay: float) -> None:
        """Try again after ``delay`` (the store was locked or full)."""
        now = self.clock.now()
        state, _ = self._pend(session_id, reason, now)
        state.not_before = now + delay

    def reread(self, session_id: str) -> None:
        """A read of the session caught a file mid-write: read it again the settle time after
        the last change seen (the read itself, when no hint comes), pacing allowing. The reason
        is the first hint to come meanwhile (the end of that write, seen by an event), else
        ``poll``: it was looked at again."""
        state, began = self._pend(session_id, "poll", self.clock.now())
        if began:
            state.unhinted = True
        state.mid_write = True

    def _pend(self, session_id: str, reason: Reason, now: float) -> tuple[_Session, bool]:
        """The session's state, made pending at ``now`` for ``reason`` unless it already is
        (True when it was not)."""
        state = self._sessions.setdefault(session_id, _Session())
        if state.first_change is not None:
            return state, False
        state.first_change = state.last_change = now
        state.reason = reason
        self._pending.add(session_id)
        return state, True

    def forget(self, session_id: str) -> None:
        """The session left the sessions root: drop what is pending for it."""
        self._startup.pop(session_id, None)
        self._pending.discard(session_id)
        state = self._sessions.get(session_id)
        if state is not None and not state.running:
            del self._sessions[session_id]
        elif state is not None:
            # Its ingest is under way: a change seen meanwhile is no longer pending either, or a
            # session back under the same id would look pending and never be made due.
            state.first_change = None
            state.mid_write = state.unhinted = False

    # -- the worker's side -------------------------------------------------------------

    def take(self) -> Due | None:
        """The next live session to ingest now (marked running), or None."""
        now = self.clock.now()
        best: tuple[float, str] | None = None
        for session_id in self._pending:
            state = self._sessions[session_id]
            if state.running:
                continue
            due = self._due(state)
            if due <= now and (best is None or (due, session_id) < best):
                best = (due, session_id)
        if best is not None:
            session_id = best[1]
            state = self._sessions[session_id]
            self._pending.discard(session_id)
            state.first_change = None
            state.not_before = 0.0
            state.mid_write = False
            state.unhinted = False
            state.running = True
            state.started = now
            return Due(session_id, state.reason)
        return None

    def live_due(self) -> bool:
        """True when ``take`` would hand out a live session now."""
        now = self.clock.now()
        return any(not self._sessions[s].running and self._due(self._sessions[s]) <= now for s in self._pending)

    def catch_up_now(self) -> list[str]:
        """The sessions still to catch up, in order, when the catch-up may go on now (else none)."""
        return list(self._startup) if self.clock.now() >= self._startup_not_before else []

    def caught_up(self, session_id: str, *, resolved: bool) -> None:
        """The catch-up is done with the session (``resolved``: as for ``finished``)."""
        self._startup.pop(session_id, None)
        state = self._sessions.get(session_id)
        if state is not None:
            if resolved:
                state.reported = ()
            self._drop_if_idle(session_id, state)

    def finished(self, due: Due, *, cost_seconds: float | None, resolved: bool) -> None:
        """The ingest handed out by ``take`` is over.

        ``cost_seconds`` is its CPU time, None when nothing was read (the files had not
        changed since the last read); ``resolved`` is True when it stored the session whole (so a
        later problem is reported again even if it looks like one logged before).
        """
        state = self._sessions[due.session_id]
        state.running = False
        if due.reason != "startup" and cost_seconds is not None:
            state.costs.append(cost_seconds)
            state.live_started = state.started
        if resolved:
            state.reported = ()
        self._drop_if_idle(due.session_id, state)

    def report_once(self, session_id: str, problem: Hashable) -> bool:
        """True the first time ``problem`` (e.g. a torn file at one fingerprint) is seen for the
        session since it was last stored whole (``resolved``)."""
        state = self._sessions.setdefault(session_id, _Session())
        known = problem in state.reported
        others = tuple(kept for kept in state.reported if kept != problem) if known else state.reported
        state.reported = (*others, problem)[-REPORTED_KEPT:]  # met now: the last to be forgotten
        return not known

    def reported_problems(self) -> dict[str, tuple[Hashable, ...]]:
        """Every session's logged problems (carried over a configuration reload)."""
        return {sid: state.reported for sid, state in self._sessions.items() if state.reported}

    def remember_reported(self, problems: dict[str, tuple[Hashable, ...]]) -> None:
        for session_id, reported in problems.items():
            self._sessions.setdefault(session_id, _Session()).reported = reported

    def next_wakeup(self) -> float | None:
        """When ``take`` may next return something (now, if it already can), or None."""
        dues = [self._due(self._sessions[s]) for s in self._pending if not self._sessions[s].running]
        if self._startup:
            dues.append(max(self.clock.now(), self._startup_not_before))
        return min(dues, default=None)

    def prune(self) -> None:
        """Forget idle sessions whose pacing has expired (memory stays bounded)."""
        for session_id, state in list(self._sessions.items()):
            self._drop_if_idle(session_id, state)

    # -- what status lines show --------------------------------------------------------

    @property
    def catching_up(self) -> int:
        return len(self._startup)

    # -- internals ---------------------------------------------------------------------

    def _pace(self, state: _Session) -> float:
        if not state.costs:
            return 0.0
        mean_cost = sum(state.costs) / len(state.costs)
        return min(mean_cost / self.cpu_share, self.max_wait)

    def _due(self, state: _Session) -> float:
        assert state.first_change is not None
        settled = state.last_change + self.settle
        capped = state.first_change + self.burst
        # The cap, held back by a write seen a moment ago, by the settle time at most.
        quiet_or_capped = max(capped, min(settled, capped + self.settle))
        due = min(settled if state.mid_write else state.last_change + self.debounce, quiet_or_capped)
        if state.live_started is not None:
            due = max(due, state.live_started + self._pace(state))
        due = min(due, state.first_change + self.max_wait)
        return max(due, state.not_before)

    def _drop_if_idle(self, session_id: str, state: _Session) -> None:
        if state.running or state.first_change is not None or session_id in self._startup:
            return
        if state.reported:
            return
        recent = state.live_started is not None and self.clock.now() - state.live_started < FORGET_AFTER_SECONDS
        if not recent:
            del self._sessions[session_id]
