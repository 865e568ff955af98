"""The review app's query parameters, checked: a bad value is a UsageError naming it (a 400 page).

Every number and date is bounded before it reaches the store, so no parameter can make a
page overflow, fail or run for long.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta

from postrun.errors import UsageError
from postrun.review.flags import FLAG_KINDS
from postrun.store.session_filter import ORDERS, Order, SessionFilter
from postrun.store.verdicts import check_verdict_filter

TRUE = ("1", "on", "true", "yes")
MAX_PAGE = 1_000_000
MAX_SEQ = 10**12 - 1  # a step's seq: the most digits ``number`` takes
MAX_DAYS = 3650  # the widest range of the files and activity pages: ten years
FLAG_FILTERS = (*FLAG_KINDS, "any")
_ORDERS: dict[str, Order] = {order: order for order in ORDERS}


def day(params: Mapping[str, str], name: str) -> date | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UsageError(name, f"expected a date like 2026-11-29, got {value!r}") from None


def utc_start(value: date) -> str:
    return f"{value.isoformat()}T00:00:00.000Z"


def utc_end(value: date) -> str | None:
    """The start of the day after ``value`` (None after the last day a date can name)."""
    return None if value == date.max else utc_start(value + timedelta(days=1))


def days_before(value: date, days: int) -> date:
    """``days`` days before ``value``, or the first day a date can name."""
    return value - timedelta(days=days) if (value - date.min).days >= days else date.min


def choice(params: Mapping[str, str], name: str, known: Sequence[str]) -> str | None:
    value = params.get(name) or None
    if value is not None and value not in known:
        shown = ", ".join(known) if len(value) <= 100 else "…"
        raise UsageError(name, f"unknown value {value[:100]!r} (known: {shown})")
    return value


def number(params: Mapping[str, str], name: str, default: int, *, low: int, high: int, what: str) -> int:
    value = params.get(name, "").strip() or str(default)
    if len(value) > 12 or not value.isdigit() or not low <= int(value) <= high:
        raise UsageError(name, f"expected {what} from {low:,} to {high:,}, got {value[:40]!r}")
    return int(value)


def page_number(params: Mapping[str, str]) -> int:
    return number(params, "page", 1, low=1, high=MAX_PAGE, what="a page number")


def seq_range(params: Mapping[str, str]) -> tuple[int, int] | None:
    """``from`` and ``to``, the first and last seq of a part of a turn (None: neither given)."""
    if not params.get("from") and not params.get("to"):
        return None
    first = number(params, "from", 0, low=0, high=MAX_SEQ, what="a step number")
    last = number(params, "to", MAX_SEQ, low=first, high=MAX_SEQ, what="a step number")
    return first, last


def checked(params: Mapping[str, str], name: str) -> bool:
    return params.get(name, "") in TRUE


def sessions_filter(params: Mapping[str, str], agents: Sequence[str]) -> SessionFilter:
    """The sessions list's filter; ``agents``: the agent kinds there are."""
    since, until = day(params, "from"), day(params, "to")
    order = _ORDERS[choice(params, "order", ORDERS) or "review"]
    return SessionFilter(
        text=params.get("q", "").strip()[:200] or None,
        workspace=params.get("workspace") or None,
        agent=choice(params, "agent", agents),
        state=choice(params, "state", ("open", "ended")),
        failed=checked(params, "failed"),
        flagged=checked(params, "flagged"),
        flag=choice(params, "flag", FLAG_FILTERS),
        since_utc=utc_start(since) if since else None,
        until_utc=utc_end(until) if until else None,
        verdict=check_verdict_filter(params.get("verdict") or None),
        needs_review=checked(params, "needs"),
        order=order,
        page=page_number(params),
    )


def day_range(params: Mapping[str, str], today: date, *, default_days: int) -> tuple[date, date]:
    """``from`` and ``to`` (by default the last ``default_days`` days to ``today``), at most
    MAX_DAYS days apart."""
    until = day(params, "to") or today
    since = day(params, "from") or days_before(until, default_days - 1)
    if since > until:
        raise UsageError("from", f"the range starts ({since}) after it ends ({until})")
    span = (until - since).days + 1
    if span > MAX_DAYS:
        raise UsageError("from", f"at most {MAX_DAYS:,} days at once ({span:,} asked, {since} to {until})")
    return since, until
