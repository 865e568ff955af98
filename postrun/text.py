"""Text from session data made safe to show: control characters and bidi controls escaped.

A terminal escape (ESC, BEL, C1 controls) must not reach a terminal, and a bidi control
(the right-to-left override and its kin) must not make text display in another order than
it is stored: every view shows both as escapes (``\\x1b``, ``\\u202e``). The views people read
(``show``, ``sessions``, ``search``, the review app's pages) also show the characters that
display as nothing (a zero-width space, a Unicode tag): text an agent wrote could hide an
instruction or disguise a command in them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Embeddings, overrides and isolates, the implicit marks and the Arabic letter mark.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# Characters that show as nothing: the zero-width space, the word joiner and the invisible
# operators, the byte order mark, the Unicode tags (which can spell out a whole instruction no
# reader sees).
INVISIBLE = "\u200b\u2060-\u2064\ufeff\U000e0000-\U000e007f"
# The zero-width non-joiner and joiner, where they can only hide: beside ASCII on both sides (in
# a command, a path, a word). Between other characters they shape text (an emoji of several, a
# Persian or Indic word) and are left as they are.
_JOINERS_IN_ASCII = "(?<![^\x00-\x7f])[\u200c\u200d](?![^\x00-\x7f])"
# A subdivision flag (England, Scotland, Wales): the black flag, a region and subdivision code in
# tag letters and digits, the cancel tag. These tags draw the flag and are left as they are; any
# other tag spells text no reader sees.
_FLAG_TAGS = "\U0001f3f4[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,4}\U000e007f"
_HIDDEN = re.compile(f"({_FLAG_TAGS})|[{BIDI_CONTROLS}{INVISIBLE}]|{_JOINERS_IN_ASCII}")
# Any character ``_HIDDEN`` may mark: one scan of a whole page for it is about a ninth of the
# alternation's, and most text holds none.
_MAYBE_HIDDEN = re.compile(f"[{BIDI_CONTROLS}{INVISIBLE}\u200c\u200d]")
# C0 and C1 control characters (and DEL), and the bidi controls.
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
_CONTROL_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
_CONTROL_ONLY = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What JSON may hold raw inside a string but no viewer should act on: C1 controls and bidi controls.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{BIDI_CONTROLS}]")
# A surrogate alone: how Python decodes an argument's or a path's bytes that are not UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return _escaped(match.group())


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``), so it stays one line,
    and every bidi control too (``\\u202e``)."""
    return _CONTROL.sub(_escape, text)


def visible(text: str) -> str:
    """``text`` as ``printable`` makes it, but newlines and tabs kept: for blocks of text."""
    return _CONTROL_BUT_LAYOUT.sub(_escape, text)


def controls_shown(text: str) -> str:
    """``text`` with its control characters (but newlines and tabs) shown as escapes, and its bidi
    controls and invisible characters (``mark_hidden``) left for a page to mark."""
    return _CONTROL_ONLY.sub(_escape, text)


def revealed(text: str) -> str:
    """``text`` with every bidi control and invisible character shown as an escape (``\\u200b``,
    ``\\U000e0041``): what a terminal view prints, so text an agent wrote hides nothing from
    the reader."""
    return mark_hidden(text, _escaped)


def mark_hidden(text: str, mark: Callable[[str], str]) -> str:
    """``text`` with each bidi control and each character that shows as nothing replaced by
    ``mark(character)``; the tags of a subdivision flag kept."""
    if _MAYBE_HIDDEN.search(text) is None:
        return text
    return _HIDDEN.sub(lambda match: match.group() if match.group(1) else mark(match.group()), text)


def hidden_name(char: str) -> str:
    """How a page names a bidi control or an invisible character: ``U+200B``."""
    return f"U+{ord(char):04X}"


def json_escaped(data: bytes) -> bytes:
    """JSON text with C1 and bidi controls inside its strings written as ``\\u`` escapes: the
    same values, shown as escapes by anything that displays the file."""
    text = data.decode()
    if _JSON_UNSAFE.search(text) is None:
        return data
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text).encode()


def one_line(text: str, limit: int | None = None) -> str:
    """Whitespace folded to single spaces, control characters escaped, cut at ``limit``."""
    folded = printable(" ".join(text.split()))
    if limit is None or len(folded) <= limit:
        return folded
    return folded[: limit - 1] + "…"


def as_stored(text: str) -> str:
    """``text`` with each byte that was not UTF-8 (a lone surrogate) as U+FFFD, as the store
    keeps such bytes of the agents' files: what SQLite can be given, and what it holds."""
    return _SURROGATE.sub("\ufffd", text)


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (it holds no lone surrogate)."""
    return _SURROGATE.search(text) is None


def plural(count: int, noun: str, *, grouped: bool = True) -> str:
    """``1 step``, ``2,000 steps``; ``grouped=False``: ``2000 steps``, for lines that scripts read
    (``capture --once``'s summary, ``status``, capture's ``watching`` line)."""
    shown = f"{count:,}" if grouped else str(count)
    return f"{shown} {noun}" if count == 1 else f"{shown} {noun}s"


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
