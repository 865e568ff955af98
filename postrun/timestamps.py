"""Times as Postrun writes them: ISO 8601 in UTC with a ``Z``; the agents' epoch milliseconds as such."""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

# What ``utc_iso`` writes with milliseconds (the adapters' own form too).
_UTC_MILLISECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", re.ASCII)


def utc_iso(moment: datetime, *, timespec: str = "milliseconds") -> str:
    """``2026-11-29T12:00:00.000Z``; a naive ``moment`` is taken as local time."""
    return moment.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def utc_now(*, timespec: str = "seconds") -> str:
    return utc_iso(datetime.now(UTC), timespec=timespec)


def normalize_timestamp(value: str) -> str:
    """An ISO date or date-time with any zone, as UTC ``…Z`` with milliseconds (so stored
    times sort as text). A date alone means local midnight. Raises ValueError."""
    if _UTC_MILLISECONDS.fullmatch(value):
        return value
    try:
        return utc_iso(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except OverflowError:
        raise ValueError(f"{value!r} is outside the years 1 to 9999 in UTC") from None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Epoch milliseconds that a date can hold (years 1 to 9999).
_MIN_MS, _MAX_MS = -62_135_596_800_000, 253_402_300_799_999


def epoch_ms(value: Any) -> int | None:
    """``value`` as whole epoch milliseconds when it is a number a date can hold, else None."""
    if type(value) is float:
        if not math.isfinite(value):
            return None
        value = math.floor(value)
    elif type(value) is not int:
        return None  # bool and everything that is not a number
    return value if _MIN_MS <= value <= _MAX_MS else None


def iso_from_ms(ms: int) -> str:
    """``2026-09-21T14:13:19.500Z`` for epoch milliseconds accepted by ``epoch_ms``."""
    minutes, rest = divmod(ms, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{_minute(minutes)}{seconds:02d}.{millis:03d}Z"


@functools.lru_cache(maxsize=256)
def _minute(minutes: int) -> str:
    """``2026-09-21T14:13:`` for minutes since the epoch: a session's messages come a few a minute."""
    days, minute = divmod(minutes, 1440)
    hours, minute = divmod(minute, 60)
    return f"{_day(days)}{hours:02d}:{minute:02d}:"


@functools.lru_cache(maxsize=64)
def _day(days: int) -> str:
    """``2026-09-21T`` for days since the epoch: a session's messages share a few days, and
    the calendar arithmetic is most of the cost of a step's time."""
    date = _EPOCH + timedelta(days=days)
    return f"{date.year:04d}-{date.month:02d}-{date.day:02d}T"


def iso_from_ns(ns: int) -> str:
    """A file's nanosecond mtime as a timestamp."""
    return iso_from_ms(min(max(ns // 1_000_000, _MIN_MS), _MAX_MS))
