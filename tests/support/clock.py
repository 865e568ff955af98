"""A clock for tests of the capture's scheduling rules."""

from __future__ import annotations


class FakeClock:
    """A clock that moves only when told to (for tests of the scheduling rules)."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self._now += seconds
