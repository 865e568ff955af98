"""A transcript's summed metrics: the tokens, costs and API requests of its assistant messages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

TOKEN_KEYS = (
    ("input", "inputTokens"),
    ("output", "outputTokens"),
    ("cache_read", "cacheReadTokens"),
    ("cache_creation", "cacheWriteTokens"),
)
_NUMBERS = (int, float)
# Counts and costs beyond these are not counts or costs (and their sums would overflow what
# JSON and the store hold): a count above the largest integer JavaScript keeps exactly is
# ignored, and so is the total, capped at it; a cost above a billion dollars per request too.
MAX_COUNT = 2**53 - 1
MAX_COST_USD = 1e9


@dataclass(slots=True)
class Metrics:
    requests: int = 0  # assistant messages that carry metrics
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys((name for name, _ in TOKEN_KEYS), 0))
    costs: list[float] = field(default_factory=list)

    def add(self, metrics: dict[str, Any]) -> None:
        self.requests += 1
        tokens = self.tokens
        for name, key in TOKEN_KEYS:
            value = metrics.get(key)
            if value is not None:
                # ``_count`` in line for the usual count (four per request)
                count = value if type(value) is int and 0 <= value <= MAX_COUNT else _count(value)
                tokens[name] = min(tokens[name] + count, MAX_COUNT)
        cost = metrics.get("cost")
        if isinstance(cost, _NUMBERS) and not isinstance(cost, bool) and 0 < cost <= MAX_COST_USD:
            self.costs.append(float(cost))

    def copy(self) -> Metrics:
        return Metrics(self.requests, dict(self.tokens), list(self.costs))

    def record(self) -> dict[str, Any] | None:
        """Summed as stored (``inputTokens`` already includes the cache); None without any."""
        if not self.requests:
            return None
        return {"cost_usd": math.fsum(self.costs), "api_requests": self.requests, "tokens": dict(self.tokens)}


def _count(value: Any) -> int:
    if type(value) is int:
        return value if 0 <= value <= MAX_COUNT else 0
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return _count(int(value))
    return 0
