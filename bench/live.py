"""3 and 4. A running ``postrun capture``: incremental update cost and write-to-visible latency.

Open sessions are written into the sessions root before capture starts (so its start-up
ingests them): a few small ones and one large one (~10 MB). Then, while capture runs:

- small sessions get one assistant text message each, about every ``spacing`` seconds
  (seeded jitter of ±25 %, so writes fall at every phase of the poll cycle), cycling
  through them so that none is written again before its last write was ingested: with
  ingests of a few ms, pacing never holds them back (the "unpaced" latency);
- the large session gets one assistant text message, then the next only after capture
  logged the re-ingest of the previous one: that log line's ``<ms>`` and ``<W> written``
  are the incremental update figures, compared with the parse floor of the file as
  written; its latency is reported on its own line (pacing may hold it back).

Latency is from just before the file is written to the moment a read-only connection to
the store sees the new step (a fresh read transaction every 10 ms): what ``postrun
export`` would show. One ``postrun export`` at the end checks that it does.
"""

from __future__ import annotations

import itertools
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import orjson

from bench.floor import parse_floor
from bench.history import SessionWriter, dumps
from bench.proc import Capture, postrun_command, run

_POLL_SECONDS = 0.01
_UPDATE_TIMEOUT = 90.0  # pacing waits at most 60 s


@dataclass(frozen=True, slots=True)
class Sample:
    session_id: str
    latency_seconds: float


@dataclass(frozen=True, slots=True)
class Update:
    """One re-ingest of the large session after one appended message."""

    ingest_ms: float  # from capture's log line
    rows_written: int
    steps: int
    file_bytes: int
    floor_seconds: float
    latency_seconds: float
    trigger: str

    @property
    def ratio(self) -> float:
        return self.ingest_ms / 1000 / self.floor_seconds


@dataclass
class LiveResult:
    events: bool
    samples: list[Sample] = field(default_factory=list)  # small sessions: not held back by pacing
    updates: list[Update] = field(default_factory=list)  # the large, paced session
    exported: bool = False  # ``postrun export`` showed the last appended message


@dataclass
class _Pending:
    session: SessionWriter
    step_id: str
    written_at: float
    paced: bool


def _path(root: Path, session: SessionWriter) -> Path:
    return root / session.session_id / f"{session.session_id}.messages.json"


def _append(root: Path, session: SessionWriter, text: str) -> tuple[str, float, int]:
    """Append one assistant text message and rewrite the file in place, as Cline does."""
    message = session.add_reply(text)
    blob = dumps(session.messages_document())
    started = time.perf_counter()
    _path(root, session).write_bytes(blob)
    return f"{message['id']}#0", started, len(blob)


def measure_live(
    root: Path,
    env: Mapping[str, str],
    *,
    small: Sequence[SessionWriter],
    large: SessionWriter,
    samples: int,
    spacing_seconds: float,
    large_updates: int,
    events: bool,
    seed: int,
    log_path: Path,
) -> LiveResult:
    for session in (*small, large):
        session.write(root, ended=False)
    db = Path(env["POSTRUN_DB"])
    capture_env = dict(env) | ({} if events else {"POSTRUN_USE_EVENTS": "0"})
    result = LiveResult(events=events)
    with Capture(capture_env, log_path) as capture:
        capture.wait_stored(db, [session.session_id for session in (*small, large)], timeout=120)
        updated = re.compile(
            rf"cline updated {re.escape(large.session_id)} \((?P<steps>\d+) steps?, \d+ turns?,"
            r" (?P<written>\d+) written\) on (?P<trigger>\w+) in (?P<ms>\d+) ms"
        )
        store = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            rng = random.Random(seed)
            offsets = list(itertools.accumulate(spacing_seconds * rng.uniform(0.75, 1.25) for _ in range(samples)))
            _drive(root, capture, store, small, large, offsets, large_updates, updated, result)
        finally:
            store.close()
    last = small[-1] if small else large
    result.exported = _exported(env, last)
    return result


def _drive(
    root: Path,
    capture: Capture,
    store: apsw.Connection,
    small: Sequence[SessionWriter],
    large: SessionWriter,
    offsets: Sequence[float],
    large_updates: int,
    updated: re.Pattern[str],
    result: LiveResult,
) -> None:
    pending: list[_Pending] = []
    start = time.perf_counter()
    samples = len(offsets)
    next_small = 0
    large_sent = 0
    large_waiting: tuple[float, int] | None = None  # (written at, file bytes) of the unlogged append
    large_latency: dict[str, float] = {}
    large_logs: list[re.Match[str]] = []
    deadline = start + (offsets[-1] if offsets else 0) + (large_updates + 1) * _UPDATE_TIMEOUT
    while next_small < samples or pending or large_sent < large_updates or large_waiting is not None:
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError(f"live phase did not finish; log: {capture.log_path}")
        if next_small < samples and now >= start + offsets[next_small]:
            session = small[next_small % len(small)]
            step_id, written_at, _ = _append(root, session, f"bench sample {next_small}")
            pending.append(_Pending(session, step_id, written_at, paced=False))
            next_small += 1
        if large_waiting is None and large_sent < large_updates:
            step_id, written_at, size = _append(root, large, f"bench update {large_sent}")
            pending.append(_Pending(large, step_id, written_at, paced=True))
            large_waiting = (written_at, size)
            large_sent += 1
        for line in capture.refresh():
            found = updated.search(line)
            if found is not None and large_waiting is not None:
                large_logs.append(found)
        for item in list(pending):
            if _visible(store, item.session.session_id, item.step_id):
                latency = time.perf_counter() - item.written_at
                pending.remove(item)
                if item.paced:
                    large_latency[item.step_id] = latency
                else:
                    result.samples.append(Sample(item.session.session_id, latency))
        if large_waiting is not None and large_logs and large_latency:
            found = large_logs.pop(0)
            latency = large_latency.pop(next(iter(large_latency)))
            floor = parse_floor([_path(root, large)], repeats=5)
            result.updates.append(
                Update(
                    ingest_ms=float(found["ms"]),
                    rows_written=int(found["written"]),
                    steps=int(found["steps"]),
                    file_bytes=large_waiting[1],
                    floor_seconds=floor,
                    latency_seconds=latency,
                    trigger=found["trigger"],
                )
            )
            large_waiting = None
        time.sleep(_POLL_SECONDS)


def _visible(store: apsw.Connection, session_id: str, step_id: str) -> bool:
    row = store.execute("SELECT 1 FROM steps WHERE session_id = ? AND id = ?", (session_id, step_id)).fetchone()
    return row is not None


def _exported(env: Mapping[str, str], session: SessionWriter) -> bool:
    """``postrun export <id> --format json`` holds the last message appended to ``session``."""
    finished = run([*postrun_command(), "export", session.session_id, "--format", "json"], env)
    if finished.returncode != 0:
        return False
    envelope = orjson.loads(finished.stdout)
    last_text = session.messages[-1]["content"][0]["text"]
    return any(step.get("payload", {}).get("text") == last_text for step in envelope.get("steps", []))


@dataclass(frozen=True, slots=True)
class BusyLatency:
    """The large open session kept busy: one assistant message every ~2 s, whether or not the last was stored."""

    file_bytes: int  # the messages file as last written
    steps: int  # as capture's last log line of it says
    seconds: float
    latencies: tuple[float, ...]  # write → step visible, one per message written
    unseen: int  # messages not visible 60 s after the window closed
    cpu_seconds: float  # capture's, from the window's start until its last message was stored
    cpu_until_seconds: float  # when that CPU was read, from the window's start (the window and its tail)
    ingest_ms: tuple[float, ...]  # capture's own figure for each re-ingest of it
    floor_seconds: float  # the parse of the file as last written

    @property
    def cpu_percent(self) -> float:
        """Capture's CPU for the window's messages over the window's length, as a share of a core."""
        return 100 * self.cpu_seconds / self.seconds


_BUSY_SPACING = 2.0
_BUSY_JITTER = 0.25
_UNSEEN_AFTER = 60.0


def measure_busy_large(
    root: Path,
    env: Mapping[str, str],
    *,
    session: tuple[SessionWriter, int],
    seconds: float,
    seed: int,
    log_path: Path,
) -> BusyLatency:
    """``session`` (writer, messages written at start) is stored by capture's start-up; then one
    assistant text message is appended every 2 s (±0.25 s, seeded) for ``seconds``."""
    writer, shown = session
    del writer.messages[shown:]  # the messages of this phase are replies, appended as it runs
    writer.write(root, ended=False)
    db = Path(env["POSTRUN_DB"])
    rng = random.Random(seed)
    updated = re.compile(rf"cline updated {re.escape(writer.session_id)} \((?P<steps>\d+) steps, .* in (?P<ms>\d+) ms")
    pending: list[tuple[str, float]] = []
    latencies: list[float] = []
    with Capture(env, log_path) as capture:
        capture.wait_stored(db, [writer.session_id], timeout=120)
        time.sleep(3.0)  # start-up's own work is not the window's
        store = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            cpu_start, start = capture.cpu_seconds(), time.perf_counter()
            end, next_write, size = start + seconds, start, 0
            while (now := time.perf_counter()) < end:
                if now >= next_write:
                    step_id, written_at, size = _append(root, writer, f"bench busy {len(pending) + len(latencies)}")
                    pending.append((step_id, written_at))
                    next_write = now + _BUSY_SPACING + rng.uniform(-_BUSY_JITTER, _BUSY_JITTER)
                latencies += _seen(store, writer.session_id, pending)
                time.sleep(_POLL_SECONDS)
            # CPU read once the window's messages are stored, not when it closes: the re-ingests of
            # its last ~2 s of messages run after it (the debounce), and leaving them out counted a
            # busy session's cost short by about one re-ingest in sixteen against a 0.4 % target.
            while pending and time.perf_counter() < end + _UNSEEN_AFTER:
                latencies += _seen(store, writer.session_id, pending)
                time.sleep(_POLL_SECONDS)
            cpu, cpu_until = capture.cpu_seconds() - cpu_start, time.perf_counter() - start
        finally:
            store.close()
        capture.refresh()
        logged = [m for line in capture.lines if (m := updated.search(line)) is not None]
    return BusyLatency(
        file_bytes=size,
        steps=int(logged[-1]["steps"]) if logged else 0,
        seconds=seconds,
        latencies=tuple(latencies),
        unseen=len(pending),
        cpu_seconds=cpu,
        cpu_until_seconds=cpu_until,
        ingest_ms=tuple(float(m["ms"]) for m in logged),
        floor_seconds=parse_floor([_path(root, writer)], repeats=5),
    )


def _seen(store: apsw.Connection, session_id: str, pending: list[tuple[str, float]]) -> list[float]:
    """The latencies of the ``pending`` steps now visible, which leave ``pending``."""
    now = time.perf_counter()
    seen = [(step_id, written_at) for step_id, written_at in pending if _visible(store, session_id, step_id)]
    for item in seen:
        pending.remove(item)
    return [now - written_at for _, written_at in seen]
