"""How much of a sequence a re-made one still shares, by identity.

A live session is mapped again after each message; what did not change comes back as the
very same objects (the caches hand them on), so the records, flags and checks of a long
session's unchanged start are found at C speed and only its changed tail is worked on.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import islice
from typing import Any


def same_prefix(new: Sequence[Any], old: Sequence[Any]) -> int:
    """How many leading items of ``new`` are the very objects ``old`` has there."""
    limit = min(len(new), len(old))
    if all(map(operator.is_, new, old)):
        return limit  # only appended to: the common case
    low, high = 0, limit  # the first difference is in [low, high)
    while high - low > 32:
        middle = (low + high) // 2
        if all(map(operator.is_, islice(new, low, middle), islice(old, low, middle))):
            low = middle
        else:
            high = middle
    while low < high and new[low] is old[low]:
        low += 1
    return low
