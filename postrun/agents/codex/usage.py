"""Token usage: one count per model response (``token_usage_record``), never a running total."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from postrun.agents.codex.values import mapping, text

_COUNTS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")
Counts = tuple[int, ...]


class Usage:
    """The responses of one thread's rollout, each counted once by ``(thread id, response id)``.

    Only ``usage`` is read: ``turn_token_usage``, ``thread_token_usage`` and the
    ``token_count`` events are running totals of the same responses. A record whose thread id
    is another thread's (a child's rollout may copy its parent's history) is that thread's
    response: it is kept apart (``copies``), out of this thread's own totals."""

    __slots__ = ("copies", "requests", "seen", "sums")

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.requests = 0
        self.sums = [0, 0, 0, 0]  # input, cache read, cache creation, output
        self.copies: dict[tuple[str, str], Counts] = {}  # another thread's responses, by key

    def copy(self) -> Usage:
        other = Usage()
        other.seen = set(self.seen)
        other.requests = self.requests
        other.sums = list(self.sums)
        other.copies = dict(self.copies)
        return other

    def count(self, payload: dict[str, Any], thread_id: str, line: int) -> None:
        owner = text(payload.get("thread_id")) or thread_id
        key = (owner, text(payload.get("response_id")) or f"line-{line}")
        if key in self.seen:
            return
        self.seen.add(key)
        usage = mapping(payload.get("usage"))
        counts = tuple(value if type(value := usage.get(name)) is int and value > 0 else 0 for name in _COUNTS)
        if owner != thread_id:
            self.copies[key] = counts
            return
        self.requests += 1
        self.sums = _added(self.sums, counts)

    def metrics(self) -> dict[str, Any] | None:
        """The thread's own responses as a v1.2 ``metrics`` value; None when it reported none."""
        return _metrics(self.requests, self.sums)


def session_metrics(threads: Sequence[tuple[str, Usage]]) -> dict[str, Any] | None:
    """The metrics of a session's threads (``(thread id, usage)``) together: each thread's own
    responses, and a response another rollout copied only when its own thread is not among them
    (else that thread counts it), once however many copies there are (codex.md §4)."""
    present = {thread_id for thread_id, _ in threads}
    requests, sums = 0, [0, 0, 0, 0]
    for _, usage in threads:
        requests += usage.requests
        sums = _added(sums, usage.sums)
    added: set[tuple[str, str]] = set()
    for _, usage in threads:
        for key, counts in usage.copies.items():
            if key[0] not in present and key not in added:
                added.add(key)
                requests += 1
                sums = _added(sums, counts)
    return _metrics(requests, sums)


def _added(sums: Sequence[int], counts: Sequence[int]) -> list[int]:
    return [total + count for total, count in zip(sums, counts, strict=True)]


def _metrics(requests: int, sums: Sequence[int]) -> dict[str, Any] | None:
    if not requests:
        return None
    tokens = dict(zip(("input", "cache_read", "cache_creation", "output"), sums, strict=True))
    return {"cost_usd": 0, "api_requests": requests, "tokens": tokens}
