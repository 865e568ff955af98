"""The mapping caches capture keeps for the sessions that change right now."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from postrun.capture.clock import Clock

CACHE_LIMIT = 8  # mapping caches kept for the most recently changed sessions
CACHE_IDLE_SECONDS = 300.0  # and dropped after this long without a change


class MappingCaches:
    """The mapping caches of the few sessions that change right now (bounded, idle ones dropped)."""

    def __init__(self, clock: Clock, *, limit: int = CACHE_LIMIT, idle_seconds: float = CACHE_IDLE_SECONDS) -> None:
        self.clock = clock
        self.limit = limit
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._caches: OrderedDict[str, tuple[Any, float]] = OrderedDict()

    def get(self, session_id: str) -> Any | None:
        with self._lock:
            entry = self._caches.get(session_id)
            return None if entry is None else entry[0]

    def put(self, session_id: str, cache: Any) -> None:
        with self._lock:
            self._caches[session_id] = (cache, self.clock.now())
            self._caches.move_to_end(session_id)
            while len(self._caches) > self.limit:
                self._caches.popitem(last=False)

    def prune(self) -> None:
        cutoff = self.clock.now() - self.idle_seconds
        with self._lock:
            for session_id in [s for s, (_, used) in self._caches.items() if used < cutoff]:
                del self._caches[session_id]

    def clear(self) -> None:
        with self._lock:
            self._caches.clear()
