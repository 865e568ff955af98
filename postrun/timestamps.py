"""Times as Postrun writes them: ISO 8601 in UTC with a ``Z``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

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
