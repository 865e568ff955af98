"""Text from session data made safe to print: one line, no control characters."""

from __future__ import annotations

import re

# C0 and C1 control characters (and DEL): an ESC or BEL in a title must not reach the terminal.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``), so it stays one line."""
    return _CONTROL.sub(_escape, text)


def one_line(text: str, limit: int | None = None) -> str:
    """Whitespace folded to single spaces, control characters escaped, cut at ``limit``."""
    folded = printable(" ".join(text.split()))
    if limit is None or len(folded) <= limit:
        return folded
    return folded[: limit - 1] + "…"


def plural(count: int, noun: str) -> str:
    """``1 step``, ``2 steps``."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def size_text(count: int) -> str:
    """A byte count for people: ``812 B``, ``12.3 KB``, ``4.1 MB`` (powers of 1024)."""
    if count < 1024:
        return f"{count} B"
    value = count / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
