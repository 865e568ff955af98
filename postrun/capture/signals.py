"""The capture's signals: SIGTERM/SIGINT ask to stop, SIGHUP to re-read the configuration."""

from __future__ import annotations

import signal
import threading
from types import FrameType

from postrun.startsignals import take


class Signals:
    """SIGTERM/SIGINT ask to stop, SIGHUP to re-read the configuration (main thread only)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.stop = False
        self.interrupt = False  # the stop was Ctrl-C (SIGINT), not SIGTERM
        self.reload = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for number, handler in (
            (signal.SIGTERM, self._on_stop),
            (signal.SIGINT, self._on_interrupt),
            (signal.SIGHUP, self._on_reload),
        ):
            self._previous[number] = signal.signal(number, handler)
        # A stop asked for while the command started (``postrun.startsignals``): as if it came now.
        for noted in take():
            (self._on_interrupt if noted == signal.SIGINT else self._on_stop)(noted, None)

    def restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def wait(self, timeout: float) -> None:
        self.event.wait(timeout)

    def _on_stop(self, _number: int, _frame: FrameType | None) -> None:
        self.stop = True
        self.event.set()

    def _on_interrupt(self, number: int, frame: FrameType | None) -> None:
        self.interrupt = True
        self._on_stop(number, frame)

    def _on_reload(self, _number: int, _frame: FrameType | None) -> None:
        self.reload = True
        self.event.set()
