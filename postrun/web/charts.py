"""Activity charts as numbers an SVG template draws: a bar per day (or per few days over a long
range, at most MAX_BARS bars), scaled to the busiest bar."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from postrun.store.activity import DayActivity
from postrun.web.filters import cost

WIDTH = 720
HEIGHT = 120
MAX_BARS = 366  # a year of days; a longer range puts several days in each bar
_GAP = 2


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str  # the day and its value, shown on hover


@dataclass(frozen=True, slots=True)
class Chart:
    name: str
    total: str
    peak: str
    bars: list[Bar]
    first_day: str
    last_day: str
    days_per_bar: int = 1
    width: int = WIDTH
    height: int = HEIGHT


def _chart(
    name: str, spans: list[tuple[date, date]], values: list[float], show: Callable[[float], str], days_per_bar: int
) -> Chart:
    peak = max(values, default=0.0)
    slot = WIDTH / max(len(spans), 1)
    bars = []
    for i, ((first, last), value) in enumerate(zip(spans, values, strict=True)):
        height = 0.0 if peak <= 0 else max(1.0, value / peak * (HEIGHT - 4)) if value > 0 else 0.0
        when = str(first) if first == last else f"{first} – {last}"
        bars.append(Bar(i * slot + _GAP / 2, HEIGHT - height, max(slot - _GAP, 1.0), height, f"{when}: {show(value)}"))
    first_day, last_day = (str(spans[0][0]), str(spans[-1][1])) if spans else ("", "")
    return Chart(name, show(sum(values)), show(peak), bars, first_day, last_day, days_per_bar)


def activity_charts(found: Sequence[DayActivity], since: date, until: date) -> list[Chart]:
    """The four charts over ``since`` to ``until`` (both included)."""
    days = (until - since).days + 1
    per_bar = -(-days // MAX_BARS)
    spans = []
    for start in range(0, days, per_bar):
        spans.append((since + timedelta(days=start), since + timedelta(days=min(start + per_bar, days) - 1)))

    def series(pick: Callable[[DayActivity], float]) -> list[float]:
        totals = [0.0] * len(spans)
        for entry in found:
            offset = (date.fromisoformat(entry.day) - since).days
            if 0 <= offset < days:
                totals[offset // per_bar] += pick(entry)
        return totals

    def count(value: float) -> str:
        return f"{int(value):,}"

    return [
        _chart("Sessions", spans, series(lambda entry: entry.sessions), count, per_bar),
        _chart("Steps", spans, series(lambda entry: entry.steps), count, per_bar),
        _chart("Failed steps", spans, series(lambda entry: entry.failed_steps), count, per_bar),
        _chart("Cost", spans, series(lambda entry: entry.cost_usd), lambda value: cost(value) or "$0", per_bar),
    ]
