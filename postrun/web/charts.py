"""Activity charts as numbers an SVG template draws: one bar per day, scaled to the busiest day."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from postrun.store.browse import DayActivity
from postrun.web.filters import cost

WIDTH = 720
HEIGHT = 120
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
    width: int = WIDTH
    height: int = HEIGHT


def _chart(name: str, days: list[date], values: list[float], show: Callable[[float], str]) -> Chart:
    peak = max(values, default=0.0)
    slot = WIDTH / max(len(days), 1)
    bars = []
    for i, (day, value) in enumerate(zip(days, values, strict=True)):
        height = 0.0 if peak <= 0 else max(1.0, value / peak * (HEIGHT - 4)) if value > 0 else 0.0
        bars.append(Bar(i * slot + _GAP / 2, HEIGHT - height, max(slot - _GAP, 1.0), height, f"{day}: {show(value)}"))
    return Chart(name, show(sum(values)), show(peak), bars, str(days[0]) if days else "", str(days[-1]) if days else "")


def activity_charts(found: Sequence[DayActivity], since: date, until: date) -> list[Chart]:
    days = [since + timedelta(days=i) for i in range((until - since).days + 1)]
    by_day = {entry.day: entry for entry in found}

    def series(pick: Callable[[DayActivity], float]) -> list[float]:
        return [pick(by_day[str(day)]) if str(day) in by_day else 0.0 for day in days]

    def count(value: float) -> str:
        return f"{int(value):,}"

    return [
        _chart("Sessions", days, series(lambda entry: entry.sessions), count),
        _chart("Steps", days, series(lambda entry: entry.steps), count),
        _chart("Failed steps", days, series(lambda entry: entry.failed_steps), count),
        _chart("Cost", days, series(lambda entry: entry.cost_usd), lambda value: cost(value) or "$0"),
    ]
