"""Jinja filters: times, durations, costs, and session text made visible (control characters shown)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from postrun import text


def visible(value: Any) -> str:
    """Session text with control characters (but newlines and tabs) and bidi controls shown as
    escapes (``\\x1b``, ``\\u202e``)."""
    return text.visible(str(value))


def when(stamp: str | None) -> str:
    """``2026-11-29 18:25`` (UTC) from a stored timestamp."""
    return "" if not stamp else stamp[:16].replace("T", " ")


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def duration(started: str, ended: str | None) -> str:
    if ended is None:
        return ""
    seconds = max(0, int((_parse(ended) - _parse(started)).total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds // 60 % 60:02d}m"


def cost(value: float | None) -> str:
    return "" if value is None else f"${value:,.2f}" if value >= 0.995 else f"${value:.4f}".rstrip("0").rstrip(".")


# Short words for the flag kinds the rules know; any other kind shows as its name.
_FLAG_WORDS = {
    "dangerous_command": "risky command",
    "secret_in_output": "secret",
    "outside_workspace": "outside workspace",
    "sensitive_read": "credentials file",
    "rejected": "rejected",
    "failed": "failed",
}


def flag_word(kind: str) -> str:
    return _FLAG_WORDS.get(kind, kind.replace("_", " "))


def number(value: int) -> str:
    return f"{value:,}"


FILTERS: dict[str, Callable[..., str]] = {
    "visible": visible,
    "when": when,
    "duration": duration,
    "cost": cost,
    "flag_word": flag_word,
    "number": number,
}
