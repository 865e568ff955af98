"""5. Daemon cost: CPU and memory of ``postrun capture`` idle, and during a busy spell.

CPU is the process's user + system time (all threads) from ``/proc`` through psutil, over
the measured window, as a share of one core. Memory is the resident set sampled every
second during the window, and the kernel's high-water mark (``VmHWM``) over the whole
life of the process, start-up included.

Busy: a few open sessions are rewritten whole, in place, every ~2 s (seeded jitter), each
rewrite adding the next message of a heavy-day turn (an assistant ``[text, tool_use]``, its
``tool_result``, …), as Cline does while it works.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.history import SessionWriter, dumps
from bench.proc import Capture

REWRITE_SECONDS = 2.0
_REWRITE_JITTER = 0.25
_SETTLE_SECONDS = 3.0  # after start-up, before the window opens
_SETTLE_TIMEOUT = 60.0  # after the window, for its last rewrites' ingests (pacing waits at most 60 s)


@dataclass(frozen=True, slots=True)
class DaemonCost:
    seconds: float
    cpu_seconds: float
    rss_peak_bytes: int  # sampled during the window
    rss_high_water_bytes: int  # VmHWM: the whole life of the process
    sessions_watched: int
    busy_sessions: int = 0
    rewrites: int = 0
    ingests: int = 0
    ingest_ms: tuple[float, ...] = ()
    tail_seconds: float = 0.0  # after the window, until every busy session's last rewrite was ingested

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu_seconds / self.seconds

    @property
    def cpu_percent_per_busy_session(self) -> float:
        return self.cpu_percent / self.busy_sessions if self.busy_sessions else float("nan")


_WATCHING = re.compile(r"cline: watching \S+ \((?P<present>\d+) sessions? present")


def measure_idle(env: Mapping[str, str], *, seconds: float, log_path: Path) -> DaemonCost:
    with Capture(env, log_path) as capture:
        present = int(capture.wait_for(_WATCHING, timeout=120)["present"])
        time.sleep(_SETTLE_SECONDS)
        return _window(capture, seconds, present, tick=lambda now: None)


def measure_busy(
    root: Path,
    env: Mapping[str, str],
    *,
    sessions: Sequence[tuple[SessionWriter, int]],
    seconds: float,
    seed: int,
    log_path: Path,
) -> DaemonCost:
    """Each of ``sessions`` is (writer, messages written at start); the rest are released one per rewrite."""
    visible = {writer.session_id: shown for writer, shown in sessions}
    writers = [writer for writer, _ in sessions]
    for writer, shown in sessions:
        writer.write(root, ended=False)
        _rewrite(root, writer, shown)
    rng = random.Random(seed)
    with Capture(env, log_path) as capture:
        present = int(capture.wait_for(_WATCHING, timeout=120)["present"])
        capture.wait_stored(Path(env["POSTRUN_DB"]), [writer.session_id for writer in writers], timeout=120)
        time.sleep(_SETTLE_SECONDS)
        start = time.monotonic()
        next_write = {w.session_id: start + rng.uniform(0, REWRITE_SECONDS) for w in writers}
        rewrites = 0
        last_rewrite: dict[str, int] = {}  # session id: capture's log lines before its last rewrite

        def tick(now: float) -> None:
            nonlocal rewrites
            for session in writers:
                session_id = session.session_id
                if now >= next_write[session_id] and visible[session_id] < len(session.messages):
                    visible[session_id] += 1
                    capture.refresh()
                    last_rewrite[session_id] = len(capture.lines)
                    _rewrite(root, session, visible[session_id])
                    rewrites += 1
                    next_write[session_id] = now + REWRITE_SECONDS + rng.uniform(-_REWRITE_JITTER, _REWRITE_JITTER)

        def settle() -> None:
            # Capture's CPU is read once every session's last rewrite was ingested, not as the
            # window closes: the ingests of its last ~2 s of rewrites run after it (the debounce).
            deadline = time.monotonic() + _SETTLE_TIMEOUT
            while time.monotonic() < deadline:
                capture.refresh()
                if all(_ingested_since(capture.lines, key, since) for key, since in last_rewrite.items()):
                    return
                time.sleep(0.01)

        cost = _window(capture, seconds, present, tick=tick, step=0.05, settle=settle)
        capture.refresh()
        ids = "|".join(re.escape(w.session_id) for w in writers)
        done = re.compile(rf"cline updated (?:{ids}) .* in (?P<ms>\d+) ms")
        ingest_ms = tuple(float(m["ms"]) for line in capture.lines if (m := done.search(line)) is not None)
    return DaemonCost(
        seconds=cost.seconds,
        cpu_seconds=cost.cpu_seconds,
        rss_peak_bytes=cost.rss_peak_bytes,
        rss_high_water_bytes=cost.rss_high_water_bytes,
        sessions_watched=present,
        busy_sessions=len(sessions),
        rewrites=rewrites,
        ingests=len(ingest_ms),
        ingest_ms=ingest_ms,
        tail_seconds=cost.tail_seconds,
    )


def _ingested_since(lines: Sequence[str], session_id: str, since: int) -> bool:
    """Capture logged an update of ``session_id`` among ``lines`` from index ``since`` on."""
    logged = f"cline updated {session_id} "
    return any(logged in line for line in lines[since:])


def _rewrite(root: Path, session: SessionWriter, limit: int) -> None:
    path = root / session.session_id / f"{session.session_id}.messages.json"
    path.write_bytes(dumps(session.messages_document(limit)))


def _window(
    capture: Capture,
    seconds: float,
    present: int,
    *,
    tick: Callable[[float], None],
    step: float = 1.0,
    settle: Callable[[], None] = lambda: None,
) -> DaemonCost:
    """Capture's CPU from now until ``seconds`` have passed and ``settle`` returned, over ``seconds``."""
    cpu_start = capture.cpu_seconds()
    start = time.monotonic()
    end = start + seconds
    peak = capture.rss_bytes()
    next_sample = start
    while (now := time.monotonic()) < end:
        tick(now)
        if now >= next_sample:
            peak = max(peak, capture.rss_bytes())
            next_sample = now + 1.0
        time.sleep(min(step, max(end - now, 0.0)))
    elapsed = time.monotonic() - start
    settle()
    cpu = capture.cpu_seconds() - cpu_start
    return DaemonCost(
        seconds=elapsed,
        cpu_seconds=cpu,
        rss_peak_bytes=max(peak, capture.rss_bytes()),
        rss_high_water_bytes=capture.peak_rss_bytes(),
        sessions_watched=present,
        tail_seconds=time.monotonic() - start - elapsed,
    )
