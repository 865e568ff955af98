"""Bounded work for the review app's big pages, and their memory given back once they are served.

A big page (a session of thousands of steps, a page of 500 diffs) builds a few MB in the
thread that serves it. Twenty at once would build twenty times that, and glibc keeps what each
thread freed in that thread's own arena: the server's RSS stays at its peak. So at most
``BIG_PAGES_AT_ONCE`` are built at a time (the others wait their turn), and when the last one in
flight is done the C heap is trimmed, returning the freed memory to the system.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from postrun.heap import trimmer

BIG_PAGES_AT_ONCE = 4


class BigPages:
    """Admits big page builds a few at a time; trims the heap after the last of a burst."""

    def __init__(self, at_once: int = BIG_PAGES_AT_ONCE, trim: Callable[[], None] | None = None) -> None:
        self._slots = threading.BoundedSemaphore(at_once)
        self._lock = threading.Lock()
        self._in_flight = 0
        self._trim = trim or trimmer()

    @contextmanager
    def building(self) -> Iterator[None]:
        with self._lock:
            self._in_flight += 1
        try:
            with self._slots:
                yield
        finally:
            with self._lock:
                self._in_flight -= 1
                last = self._in_flight == 0
            if last:
                self._trim()
