"""Cline's times as v1.2 timestamps: epoch milliseconds and ISO strings."""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime, timedelta
from typing import Any

from postrun import schema

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


def valid_timestamp(value: Any) -> str | None:
    """``value`` when it is a v1.2 timestamp (ISO 8601 with a zone), else None."""
    return value if isinstance(value, str) and schema.is_timestamp(value) else None
