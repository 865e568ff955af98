"""The capture's timing rules on a fake clock: debounce, max wait, pacing, settling, torn once per change."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable

import pytest

from postrun.capture.clock import MonotonicClock
from postrun.capture.dispatcher import Dispatcher
from postrun.capture.scheduler import REPORTED_KEPT, SETTLE_SECONDS, Due, Scheduler
from tests.support.clock import FakeClock

MAX_WAIT_SECONDS = 60  # a session that keeps changing never waits longer than this

DEBOUNCE = 2.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def scheduler(clock: FakeClock) -> Scheduler:
    return Scheduler(clock, debounce_seconds=DEBOUNCE)


def run_until_due(
    scheduler: Scheduler, clock: FakeClock, *, step: float = 0.1, limit: float = 600
) -> tuple[Due, float]:
    """Advance the clock in small steps until a session is handed out; returns it and the time."""
    start = clock.now()
    while clock.now() - start <= limit:
        due = scheduler.take()
        if due is not None:
            return due, clock.now() - start
        clock.advance(step)
    raise AssertionError("nothing became due")


def pace_interval(scheduler: Scheduler, session_id: str) -> float:
    """How long the session must wait between live ingests (0: not paced), from the scheduler's state."""
    state = scheduler._sessions.get(session_id)
    return 0.0 if state is None else scheduler._pace(state)


def ingest(scheduler: Scheduler, due: Due, clock: FakeClock, *, cost: float = 0.0, resolved: bool = True) -> None:
    """Simulate an ingest that takes ``cost`` seconds of CPU (and of wall time)."""
    clock.advance(cost)
    scheduler.finished(due, cost_seconds=cost, resolved=resolved)


def test_trailing_debounce_waits_for_quiet(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("a", "event")
    clock.advance(1.5)
    assert scheduler.take() is None
    scheduler.changed("a", "event")  # a new change restarts the pause
    clock.advance(1.9)
    assert scheduler.take() is None
    clock.advance(0.1)
    assert scheduler.take() == Due("a", "event")
    assert scheduler.take() is None  # handed out once


def test_only_a_change_that_makes_a_session_pending_can_make_it_due_sooner(
    scheduler: Scheduler, clock: FakeClock
) -> None:
    # The worker is woken only for those: a pending session's next change only moves it later.
    assert scheduler.changed("a", "event")
    wakeups = [scheduler.next_wakeup()]
    for reason in ("event", "poll", "event"):
        clock.advance(0.5)
        assert not scheduler.changed("a", reason)
        wakeups.append(scheduler.next_wakeup())
    assert wakeups == sorted(wakeups)
    clock.advance(DEBOUNCE)
    due = scheduler.take()
    assert due == Due("a", "event")
    assert scheduler.changed("a", "event")  # running: pending again, for after this ingest
    ingest(scheduler, due, clock)


def test_next_wakeup_is_the_debounce_deadline(scheduler: Scheduler, clock: FakeClock) -> None:
    assert scheduler.next_wakeup() is None
    scheduler.changed("a", "poll")
    assert scheduler.next_wakeup() == pytest.approx(clock.now() + DEBOUNCE)


def test_a_session_that_keeps_changing_waits_two_debounces_at_most(scheduler: Scheduler, clock: FakeClock) -> None:
    first = clock.now()
    taken_at = None
    while taken_at is None:
        scheduler.changed("busy", "event")  # a change every second: never quiet for 2 s
        clock.advance(1.0)
        if scheduler.take() is not None:
            taken_at = clock.now()
    assert taken_at - first == pytest.approx(2 * DEBOUNCE, abs=1.0)


def test_a_session_written_about_every_debounce_is_stored_soon_after_each_write(
    scheduler: Scheduler, clock: FakeClock
) -> None:
    """Cline writing a message every ~2 s (a little more or less each time) into a session
    whose ingests are cheap: no write waits for a quiet spell that never comes."""
    rng = random.Random(7)
    writes: list[float] = []
    waits: list[float] = []
    next_write = clock.now()
    end = clock.now() + 300.0
    while clock.now() < end:
        if clock.now() >= next_write:
            scheduler.changed("busy", "event")
            writes.append(clock.now())
            next_write = clock.now() + DEBOUNCE + rng.uniform(-0.25, 0.25)
        due = scheduler.take()
        if due is not None:
            waits += [clock.now() - written for written in writes]  # the ingest reads them all
            writes = []
            ingest(scheduler, due, clock, cost=0.015)
        clock.advance(0.05)
    assert max(waits) <= 2 * DEBOUNCE + SETTLE_SECONDS + 0.1


def test_the_burst_cap_waits_for_a_write_seen_a_moment_ago_to_settle(scheduler: Scheduler, clock: FakeClock) -> None:
    """A change just before the cap is likely a rewrite under way: the read waits until the
    files have been quiet for the settle time, and no longer than that past the cap."""
    scheduler.changed("a", "event")
    clock.advance(2 * DEBOUNCE - 0.1)
    scheduler.changed("a", "event")  # a write begins 0.1 s before the cap
    clock.advance(0.1)
    assert scheduler.take() is None
    clock.advance(SETTLE_SECONDS - 0.11)
    assert scheduler.take() is None
    clock.advance(0.02)
    assert scheduler.take() == Due("a", "event")


def test_the_burst_cap_is_held_back_by_the_settle_time_at_most(scheduler: Scheduler, clock: FakeClock) -> None:
    start = clock.now()
    taken_at = None
    while taken_at is None:
        scheduler.changed("a", "event")  # a change every 50 ms: never quiet
        clock.advance(0.05)
        if scheduler.take() is not None:
            taken_at = clock.now()
    assert taken_at - start == pytest.approx(2 * DEBOUNCE + SETTLE_SECONDS, abs=0.06)


def test_a_read_that_caught_a_file_mid_write_is_made_again_once_it_settles(
    scheduler: Scheduler, clock: FakeClock
) -> None:
    scheduler.changed("a", "poll")
    due, _ = run_until_due(scheduler, clock, step=0.01)
    scheduler.reread("a")  # the read found the file torn
    scheduler.changed("a", "event")  # the end of the write, seen while the read ran: it names the reason
    clock.advance(0.001)
    scheduler.finished(due, cost_seconds=0.001, resolved=False)  # paced to every 0.1 s
    again, waited = run_until_due(scheduler, clock, step=0.01)
    assert again == Due("a", "event")
    assert waited == pytest.approx(SETTLE_SECONDS - 0.001, abs=0.011)  # not a debounce
    ingest(scheduler, again, clock, cost=0.001)
    scheduler.changed("a", "event")  # the next change is debounced as before
    _, waited = run_until_due(scheduler, clock, step=0.01)
    assert waited == pytest.approx(DEBOUNCE, abs=0.011)


def test_a_torn_read_with_no_change_after_it_is_made_again_once(scheduler: Scheduler, clock: FakeClock) -> None:
    """No event came (they are only hints, and polls are seconds apart): the session is read
    again after the settle time; a file still torn is then left for its next change."""
    scheduler.catch_up(["a"])
    assert scheduler.catch_up_now() == ["a"]
    scheduler.reread("a")  # the catch-up's read found it torn
    scheduler.caught_up("a", resolved=False)
    again, waited = run_until_due(scheduler, clock, step=0.01)
    assert again == Due("a", "poll")  # looked at again, as a poll does, as live work
    assert waited == pytest.approx(SETTLE_SECONDS, abs=0.011)
    scheduler.finished(again, cost_seconds=None, resolved=False)  # the same fingerprint: not read
    clock.advance(600)
    assert scheduler.take() is None


def test_a_torn_read_of_files_that_never_go_quiet_is_made_again_at_the_burst_cap(
    scheduler: Scheduler, clock: FakeClock
) -> None:
    """A helper streaming a line every 50 ms: a read caught one mid-line, and the files are
    never quiet for the settle time; the next read still comes at the cap."""
    scheduler.changed("a", "event")
    due, _ = run_until_due(scheduler, clock, step=0.01)
    scheduler.reread("a")
    scheduler.finished(due, cost_seconds=None, resolved=True)
    start = clock.now()
    taken_at = None
    while taken_at is None:
        scheduler.changed("a", "event")
        clock.advance(0.05)
        if scheduler.take() is not None:
            taken_at = clock.now()
    assert taken_at - start == pytest.approx(2 * DEBOUNCE + SETTLE_SECONDS, abs=0.06)


def test_a_torn_read_is_paced_like_any_other(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("heavy", "event")
    due, _ = run_until_due(scheduler, clock)
    ingest(scheduler, due, clock, cost=0.1)  # paced to one ingest every 10 s
    scheduler.changed("heavy", "event")
    due, _ = run_until_due(scheduler, clock)
    scheduler.reread("heavy")
    ingest(scheduler, due, clock, cost=0.1)
    _, waited = run_until_due(scheduler, clock, step=0.01)
    assert waited == pytest.approx(10.0 - 0.1, abs=0.011)


def test_a_poll_does_not_push_the_debounce_of_a_pending_change(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("a", "event")
    clock.advance(1.5)
    scheduler.changed("a", "poll")  # the poll found the change the event already reported
    clock.advance(0.5)
    assert scheduler.take() == Due("a", "event")


def test_the_reason_is_the_first_hint_of_the_burst(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("a", "poll")
    scheduler.changed("a", "event")
    due, _ = run_until_due(scheduler, clock)
    assert due.reason == "poll"


@pytest.mark.parametrize(("cost", "interval"), [(0.05, 5.0), (0.2, 20.0), (3.0, MAX_WAIT_SECONDS)])
def test_pacing_from_the_cost_of_live_ingests(
    scheduler: Scheduler, clock: FakeClock, cost: float, interval: float
) -> None:
    """A session costing C is ingested at most every C / 1 % seconds, capped at the max wait."""
    starts = []
    for _ in range(4):
        scheduler.changed("heavy", "event")
        due, _ = run_until_due(scheduler, clock, step=0.05)
        starts.append(clock.now())
        ingest(scheduler, due, clock, cost=cost)
    assert pace_interval(scheduler, "heavy") == pytest.approx(interval)
    gaps = [b - a for a, b in itertools.pairwise(starts[1:])]
    # Changes arrive as soon as the last ingest ended: only pacing holds them back.
    for gap in gaps:
        assert gap == pytest.approx(max(interval, cost + DEBOUNCE), abs=0.1)


def test_pacing_never_exceeds_the_max_wait_of_a_burst(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("heavy", "event")
    due, _ = run_until_due(scheduler, clock)
    ingest(scheduler, due, clock, cost=10.0)  # 10 s of CPU: paced to 1000 s, capped at 60
    scheduler.changed("heavy", "event")
    _, waited = run_until_due(scheduler, clock)
    assert waited == pytest.approx(MAX_WAIT_SECONDS - 10.0, abs=0.2)


def test_startup_cost_does_not_pace(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.catch_up(["big"])
    assert scheduler.catch_up_now() == ["big"]
    clock.advance(5.0)  # an expensive first ingest
    scheduler.caught_up("big", resolved=True)
    assert pace_interval(scheduler, "big") == 0
    scheduler.changed("big", "event")
    _, waited = run_until_due(scheduler, clock)
    assert waited == pytest.approx(DEBOUNCE, abs=0.11)


def test_catch_up_runs_in_order_and_gives_way_to_live_work(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.catch_up(["old1", "old2", "old3"])
    scheduler.changed("live", "event")
    assert scheduler.take() is None  # the catch-up is not handed out one session at a time
    assert scheduler.next_wakeup() == clock.now()  # the catch-up may go on now
    assert scheduler.catch_up_now() == ["old1", "old2", "old3"]
    assert not scheduler.live_due()
    scheduler.caught_up("old1", resolved=True)  # a batch committed
    clock.advance(DEBOUNCE)
    assert scheduler.live_due()  # the catch-up gives way here
    assert scheduler.take() == Due("live", "event")
    assert not scheduler.live_due()
    assert scheduler.catch_up_now() == ["old2", "old3"]  # and goes on where it stopped
    for session_id in ("old2", "old3"):
        scheduler.caught_up(session_id, resolved=True)
    assert scheduler.catching_up == 0
    assert scheduler.catch_up_now() == []


def test_catch_up_retried_after_a_store_fault(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.catch_up(["a", "b"])
    scheduler.retry_catch_up(30.0)
    assert scheduler.catch_up_now() == []
    assert scheduler.next_wakeup() == pytest.approx(clock.now() + 30.0)
    clock.advance(30.0)
    assert scheduler.catch_up_now() == ["a", "b"]


def test_one_session_never_runs_twice_at_once(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("a", "event")
    clock.advance(DEBOUNCE)
    running = scheduler.take()
    assert running == Due("a", "event")
    scheduler.changed("a", "event")  # changed while its ingest runs
    clock.advance(DEBOUNCE * 5)
    assert scheduler.take() is None
    assert scheduler.next_wakeup() is None  # nothing can run until it finishes
    ingest(scheduler, running, clock)
    assert scheduler.take() is not None  # then the change is picked up


def test_two_sessions_do_not_block_each_other(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("slow", "event")
    clock.advance(DEBOUNCE)
    slow = scheduler.take()
    assert slow == Due("slow", "event")
    # While "slow" is being ingested, "quick" keeps its own schedule.
    scheduler.changed("quick", "poll")
    assert scheduler.next_wakeup() == pytest.approx(clock.now() + DEBOUNCE)
    clock.advance(DEBOUNCE)
    assert scheduler.take() == Due("quick", "poll")
    # ...and pacing of a heavy session does not hold back another one.
    ingest(scheduler, slow, clock, cost=0.5)
    scheduler.changed("slow", "event")
    scheduler.changed("other", "event")
    due, waited = run_until_due(scheduler, clock)
    assert due == Due("other", "event")
    assert waited == pytest.approx(DEBOUNCE, abs=0.11)


def test_retry_later_after_a_store_fault(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("a", "event")
    clock.advance(DEBOUNCE)
    due = scheduler.take()
    assert due is not None
    scheduler.finished(due, cost_seconds=0.01, resolved=False)
    scheduler.retry_later("a", "event", 30.0)
    clock.advance(29.0)
    assert scheduler.take() is None
    clock.advance(1.0)
    assert scheduler.take() == Due("a", "event")


def test_torn_file_reported_once_per_change(scheduler: Scheduler, clock: FakeClock) -> None:
    torn_at_v1 = ("messages", (0, 1000, 7))
    assert scheduler.report_once("a", torn_at_v1)
    assert not scheduler.report_once("a", torn_at_v1)  # the same torn file, seen again
    torn_at_v2 = ("messages", (120, 2000, 7))
    assert scheduler.report_once("a", torn_at_v2)  # a new change that is still torn
    scheduler.changed("a", "event")
    clock.advance(DEBOUNCE)
    due = scheduler.take()
    assert due is not None
    ingest(scheduler, due, clock, resolved=True)  # stored at last
    assert scheduler.report_once("a", torn_at_v2)  # a later tear is news again


def test_problems_met_together_are_each_reported_once(scheduler: Scheduler, clock: FakeClock) -> None:
    """Two helpers caught mid-line at every read: each is logged once, not at every read."""
    first, second = ("incomplete", "helper-1"), ("incomplete", "helper-2")
    assert [scheduler.report_once("a", problem) for problem in (first, second, first, second)] == [
        True,
        True,
        False,
        False,
    ]
    assert scheduler.reported_problems() == {"a": (first, second)}
    for key in range(2 * REPORTED_KEPT):  # the parent caught mid-line at each of its changes
        assert scheduler.report_once("a", ("incomplete", "parent", key))
        assert not scheduler.report_once("a", first)  # met at every read: never forgotten
    others = [("failed", key) for key in range(REPORTED_KEPT)]
    assert all(scheduler.report_once("a", problem) for problem in others)
    assert scheduler.report_once("a", first)  # forgotten after as many others: logged again
    scheduler.changed("a", "event")
    clock.advance(DEBOUNCE)
    due = scheduler.take()
    assert due is not None
    ingest(scheduler, due, clock, resolved=True)
    assert scheduler.reported_problems() == {}
    assert scheduler.report_once("a", second)


def test_forget_drops_pending_work(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.changed("gone", "event")
    scheduler.catch_up(["gone"])
    scheduler.forget("gone")
    clock.advance(MAX_WAIT_SECONDS)
    assert scheduler.take() is None
    assert scheduler.catch_up_now() == []


def test_a_session_forgotten_while_it_is_read_is_taken_up_again_when_it_comes_back(
    scheduler: Scheduler, clock: FakeClock
) -> None:
    scheduler.changed("back", "event")
    due, _ = run_until_due(scheduler, clock)
    scheduler.changed("back", "event")  # seen while its read runs
    scheduler.reread("back")
    scheduler.forget("back")  # then its folder went away
    ingest(scheduler, due, clock, cost=0.001)
    clock.advance(MAX_WAIT_SECONDS)
    assert scheduler.take() is None
    scheduler.changed("back", "event")  # the same id again
    again, waited = run_until_due(scheduler, clock)
    assert again == Due("back", "event")
    assert waited == pytest.approx(DEBOUNCE, abs=0.11)


def test_idle_sessions_are_forgotten(scheduler: Scheduler, clock: FakeClock) -> None:
    for session_id in ("a", "b"):
        scheduler.changed(session_id, "event")
    clock.advance(DEBOUNCE)
    for _ in range(2):
        due = scheduler.take()
        assert due is not None
        ingest(scheduler, due, clock, cost=0.1)
    assert pace_interval(scheduler, "a") > 0
    clock.advance(3600)
    scheduler.prune()
    assert pace_interval(scheduler, "a") == 0
    assert not scheduler._sessions  # nothing kept for idle sessions


class CatchUp:
    """A catch-up that stores one session per batch, each when the test says so."""

    def __init__(self, dispatcher: Callable[[], Dispatcher]) -> None:
        self.dispatcher = dispatcher
        self.batches: list[tuple[str, str]] = []  # (session, thread)
        self.release = threading.Semaphore(0)
        self.entered = threading.Event()
        self.finished: list[str] = []

    def __call__(self, session_ids: list[str], give_way: Callable[[], bool]) -> None:
        for session_id in session_ids:
            self.entered.set()
            assert self.release.acquire(timeout=5)
            self.batches.append((session_id, threading.current_thread().name))
            self.dispatcher().caught_up(session_id, resolved=True)
            if give_way():
                return

    def finish(self) -> None:
        self.finished.append(threading.current_thread().name)


def test_dispatcher_runs_live_work_between_two_batches_of_the_catch_up_on_its_thread() -> None:
    """The thin timer thread, on the real clock with a short debounce."""
    ran: list[tuple[Due, str]] = []
    live_done = threading.Event()

    def run(due: Due) -> tuple[float, bool]:
        ran.append((due, threading.current_thread().name))
        live_done.set()
        return 0.001, True

    catch_up = CatchUp(lambda: dispatcher)
    dispatcher = Dispatcher(
        Scheduler(MonotonicClock(), debounce_seconds=0.05), run, catch_up=catch_up, finish=catch_up.finish
    )
    dispatcher.start()
    try:
        started = time.monotonic()
        dispatcher.catch_up(["b1", "b2", "b3"])
        assert catch_up.entered.wait(5)
        dispatcher.changed("a", "event")  # while the first batch is stored
        wait_for(dispatcher.scheduler.live_due)  # its debounce passed while the batch is under way
        catch_up.release.release()
        assert live_done.wait(5)
        assert [session for session, _ in catch_up.batches] == ["b1"]  # the live session went next
        catch_up.release.release()
        catch_up.release.release()
        wait_for(lambda: dispatcher.snapshot()[0] == 0)
        elapsed = time.monotonic() - started
    finally:
        assert dispatcher.stop(5)
    assert [session for session, _ in catch_up.batches] == ["b1", "b2", "b3"]
    assert [(due.session_id, due.reason) for due, _ in ran] == [("a", "event")]
    threads = {name for _, name in ran} | {name for _, name in catch_up.batches} | set(catch_up.finished)
    assert threads == {"postrun-ingest"}
    assert elapsed < 2


def test_dispatcher_stop_waits_for_the_batch_in_progress_then_ends_the_catch_up() -> None:
    catch_up = CatchUp(lambda: dispatcher)
    dispatcher = Dispatcher(
        Scheduler(MonotonicClock(), debounce_seconds=0.01),
        lambda due: (0.0, True),
        catch_up=catch_up,
        finish=catch_up.finish,
    )
    dispatcher.start()
    dispatcher.catch_up(["a", "b"])
    assert catch_up.entered.wait(5)
    assert not dispatcher.stop(0.05)  # still storing its batch
    catch_up.release.release()
    assert dispatcher.stop(5)
    assert [session for session, _ in catch_up.batches] == ["a"]  # "b" was not started after the stop
    assert catch_up.finished == ["postrun-ingest"]  # ended on the worker thread, within the stop


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_dispatcher_housekeeping_runs_on_its_thread_between_ingests() -> None:
    calls: list[str] = []
    twice = threading.Event()

    def housekeeping() -> None:
        calls.append(threading.current_thread().name)
        if len(calls) >= 2:
            twice.set()

    dispatcher = Dispatcher(
        Scheduler(MonotonicClock(), debounce_seconds=0.01),
        lambda due: (0.0, True),
        catch_up=lambda session_ids, give_way: None,
        housekeeping=housekeeping,
        housekeeping_seconds=0.05,
    )
    dispatcher.start()
    try:
        assert twice.wait(5)  # with nothing to ingest at all
    finally:
        assert dispatcher.stop(5)
    assert set(calls) == {"postrun-ingest"}


def test_a_read_skipped_by_fingerprint_does_not_dilute_pacing(scheduler: Scheduler, clock: FakeClock) -> None:
    for cost in (0.5, None, None, None):  # one real ingest, then hints whose files had not changed
        scheduler.changed("heavy", "event")
        due, _ = run_until_due(scheduler, clock)
        ingest_cost = 0.0 if cost is None else cost
        clock.advance(ingest_cost)
        scheduler.finished(due, cost_seconds=cost, resolved=True)
    assert pace_interval(scheduler, "heavy") == pytest.approx(50.0)


def test_dispatcher_background_work_waits_for_the_catch_up_and_gives_way_to_live_work() -> None:
    """A re-flag's shape: parts run on the ingest thread only once the catch-up is done, each
    part gives way when a live session is due, and it ends when it says so."""
    events: list[str] = []
    live_done = threading.Event()
    parts: list[str] = []

    def run(due: Due) -> tuple[float, bool]:
        events.append(f"live {due.session_id}")
        live_done.set()
        return 0.001, True

    def background(give_way: Callable[[], bool]) -> float | None:
        parts.append(threading.current_thread().name)
        events.append(f"part {len(parts)}")
        if len(parts) == 1:
            dispatcher.changed("a", "event")
            wait_for(give_way)  # live work due: this part stops here
            return 0.0
        return None if len(parts) == 3 else 0.0

    catch_up = CatchUp(lambda: dispatcher)
    dispatcher = Dispatcher(
        Scheduler(MonotonicClock(), debounce_seconds=0.01), run, catch_up=catch_up, background=background
    )
    dispatcher.catch_up(["c1"])
    dispatcher.run_background()
    dispatcher.start()
    try:
        assert catch_up.entered.wait(5)
        assert parts == []  # not while the catch-up is under way
        catch_up.release.release()
        wait_for(lambda: len(parts) == 3)
        assert live_done.wait(5)
    finally:
        assert dispatcher.stop(5)
    assert events == ["part 1", "live a", "part 2", "part 3"]  # nothing after the part that said it was over
    assert set(parts) == {"postrun-ingest"}
