"""Lines appended one at a time to an open session's file under a live ``postrun capture``,
each one's ingest timed as the capture logs it (read, map, flag, store), and set against the
parse of that line alone: the append-only agents' target (at most 3x the parse plus 20 ms)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from bench.proc import Capture
from bench.stats import median

TARGET_FACTOR = 3.0
TARGET_FIXED_MS = 20.0


@dataclass(frozen=True)
class Appends:
    took_ms: tuple[int, ...]  # as the capture logs each ingest
    cpu_ms: tuple[float, ...]  # the capture process's CPU over each append, all threads
    parse_ms: float  # the median line's parse alone
    line_bytes: int
    file_bytes: int

    @property
    def allowed_ms(self) -> float:
        return TARGET_FACTOR * self.parse_ms + TARGET_FIXED_MS

    def row(self, file: str) -> str:
        """The section's row: ``file`` names what was appended to (``transcript``, ``rollout``)."""
        took = median(self.took_ms)
        return (
            f"| one line appended to a {self.file_bytes / 2**20:.0f} MB {file} (live) | {took:.0f} ms median"
            f" as capture logs it ({', '.join(map(str, self.took_ms))}); capture's CPU {median(self.cpu_ms):.0f} ms"
            f" a line (all threads, the watcher's included); the line's parse {self.parse_ms:.3f} ms"
            f" ({self.line_bytes} B) | ≤ {self.allowed_ms:.1f} ms | {'met' if took <= self.allowed_ms else 'missed'} |"
        )


def time_appends(capture: Capture, kind: str, path: Path, more: Callable[[], list[bytes]], count: int) -> Appends:
    """Append ``count`` lines to ``path`` one at a time (``more()`` gives the next lines the agent
    would write), waiting for the capture's line about each."""
    updated = re.compile(
        rf"INFO {re.escape(kind)} (?:updated|unchanged) \S+ \(.*\) on (?:event|poll) in (?P<ms>\d+) ms$"
    )
    took: list[int] = []
    cpu: list[float] = []
    lines: list[bytes] = []
    while len(took) < count:
        for line in more()[: count - len(took)]:
            since = len(capture.lines)
            before = capture.cpu_seconds()
            with path.open("ab") as out:
                out.write(line)
            found = capture.wait_for(updated, timeout=120, since=since)
            took.append(int(found["ms"]))
            cpu.append((capture.cpu_seconds() - before) * 1000)
            lines.append(line)
            time.sleep(0.3)  # past the debounce: each line is its own ingest (the writer's pace, not a wait)
    return Appends(
        took_ms=tuple(took),
        cpu_ms=tuple(cpu),
        parse_ms=median([parse_ms(line) for line in lines]),
        line_bytes=int(median([len(line) for line in lines])),
        file_bytes=path.stat().st_size,
    )


def parse_ms(line: bytes, repeats: int = 2000) -> float:
    started = time.perf_counter()
    for _ in range(repeats):
        orjson.loads(line)
    return (time.perf_counter() - started) * 1000 / repeats
