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
    ``token_count`` events are running totals of the same responses."""

    __slots__ = ("counted", "requests", "sums")

    def __init__(self) -> None:
        self.counted: dict[tuple[str, str], Counts] = {}  # what each response added
        self.requests = 0
        self.sums = [0, 0, 0, 0]  # input, cache read, cache creation, output

    def copy(self) -> Usage:
        other = Usage()
        other.counted = dict(self.counted)
        other.requests = self.requests
        other.sums = list(self.sums)
        return other

    def count(self, payload: dict[str, Any], thread_id: str, line: int) -> None:
        # A record without a response id is this rollout's own line: keyed so that no other
        # rollout's record can be taken for it.
        response = text(payload.get("response_id"))
        key = (text(payload.get("thread_id")) or thread_id, response) if response else (thread_id, f"line-{line}")
        if key in self.counted:
            return
        usage = mapping(payload.get("usage"))
        counts = tuple(value if type(value := usage.get(name)) is int and value > 0 else 0 for name in _COUNTS)
        self.counted[key] = counts
        if key[0] == thread_id:  # a copy of another thread's response is that thread's usage
            self.requests += 1
            self.sums = [total + count for total, count in zip(self.sums, counts, strict=True)]

    def metrics(self) -> dict[str, Any] | None:
        """The thread's own responses as a v1.2 ``metrics`` value; None when it reported none."""
        return _metrics(self.requests, self.sums)


def session_metrics(usages: Sequence[Usage]) -> dict[str, Any] | None:
    """The metrics of a session's rollouts together, a response counted once however many
    rollouts hold its record (a child's rollout may copy its parent's history; the key is the
    record's thread id and response id, codex.md §4)."""
    seen: set[tuple[str, str]] = set()
    requests, sums = 0, [0, 0, 0, 0]
    for usage in usages:
        if not usage.counted:  # a thread kept as stored: its totals are all there is
            requests += usage.requests
            sums = [total + count for total, count in zip(sums, usage.sums, strict=True)]
            continue
        for key, counts in usage.counted.items():
            if key not in seen:
                seen.add(key)
                requests += 1
                sums = [total + count for total, count in zip(sums, counts, strict=True)]
    return _metrics(requests, sums)


def _metrics(requests: int, sums: Sequence[int]) -> dict[str, Any] | None:
    if not requests:
        return None
    tokens = dict(zip(("input", "cache_read", "cache_creation", "output"), sums, strict=True))
    return {"cost_usd": 0, "api_requests": requests, "tokens": tokens}
