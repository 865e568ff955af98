"""Token usage: one count per model response (``token_usage_record``), never a running total."""

from __future__ import annotations

from typing import Any

from postrun.agents.codex.values import mapping, text

_COUNTS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")


class Usage:
    """The responses of one thread, each counted once by ``(thread id, response id)``.

    Only ``usage`` is read: ``turn_token_usage``, ``thread_token_usage`` and the
    ``token_count`` events are running totals of the same responses."""

    __slots__ = ("requests", "seen", "sums")

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.requests = 0
        self.sums = [0, 0, 0, 0]  # input, cache read, cache creation, output

    def copy(self) -> Usage:
        other = Usage()
        other.seen = set(self.seen)
        other.requests = self.requests
        other.sums = list(self.sums)
        return other

    def count(self, payload: dict[str, Any], thread_id: str, line: int) -> None:
        key = (text(payload.get("thread_id")) or thread_id, text(payload.get("response_id")) or f"line-{line}")
        if key in self.seen:
            return
        self.seen.add(key)
        self.requests += 1
        usage = mapping(payload.get("usage"))
        for position, name in enumerate(_COUNTS):
            value = usage.get(name)
            if type(value) is int and value > 0:
                self.sums[position] += value

    def metrics(self) -> dict[str, Any] | None:
        """A v1.2 ``metrics`` value; None when the thread reported no response."""
        if not self.requests:
            return None
        tokens = dict(zip(("input", "cache_read", "cache_creation", "output"), self.sums, strict=True))
        return {"cost_usd": 0, "api_requests": self.requests, "tokens": tokens}
