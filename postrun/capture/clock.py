"""Time for the capture's scheduling: a monotonic clock behind a protocol, so tests drive their own."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean anything)."""
        ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()
