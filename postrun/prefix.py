"""How much of a sequence a re-made one still shares, by identity.

A live session is mapped again after each message; what did not change comes back as the
very same objects (the caches hand them on), so the records, flags and checks of a long
session's unchanged start are found at C speed and only its changed tail is worked on.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress, count
from typing import Any


def same_prefix(new: Sequence[Any], old: Sequence[Any]) -> int:
    """How many leading items of ``new`` are the very objects ``old`` has there."""
    # One pass at C speed, up to the first item that differs.
    return next(compress(count(), map(operator.is_not, new, old)), min(len(new), len(old)))
