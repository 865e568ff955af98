"""Jinja filters: times, durations, costs, and session text made visible (control characters shown)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from markupsafe import Markup, escape

from postrun import text


def visible(value: Any) -> Markup:
    """Session text, escaped, with control characters (but newlines and tabs) shown as escapes
    (``\\x1b``), and each bidi control or invisible character as a marked ``<U+200B>``: as a
    careful code-review tool shows them, so text an agent wrote can neither reorder what the
    reader sees nor hide words from them. Cut it (``truncate``) before, never after."""
    return marked(escape(text.controls_shown(str(value))))


def marked(html: str) -> Markup:
    """Safe HTML (escaped text, highlighted code) with each bidi control or invisible character
    in it replaced by its mark: they stand in text, never in a tag."""
    return Markup(text.mark_hidden(html, _mark))


def _mark(char: str) -> str:
    name = text.hidden_name(char)
    title = f"a hidden character (invisible or text direction): {name}"
    return f'<span class="hidden-char" title="{title}">&lt;{name}&gt;</span>'


def visible_attr(value: Any) -> str:
    """``visible`` for an attribute (a tooltip, a label): the marks as plain ``<U+200B>``."""
    shown = text.mark_hidden(str(value), lambda char: f"<{text.hidden_name(char)}>")
    return text.controls_shown(shown)


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
    "visible_attr": visible_attr,
    "when": when,
    "duration": duration,
    "cost": cost,
    "flag_word": flag_word,
    "number": number,
}
