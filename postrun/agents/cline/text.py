"""User text: the ``<user_input>`` wrapper, prompt text and synthetic user messages.

Cline stores every real prompt as ``<user_input mode="act|plan|yolo">…</user_input>``
(a user-initiated mode switch adds a ``<mode_notice>`` inside), and also stores
``user`` messages that no person typed: reminders, hook context, compaction
summaries, canned continuations. Those never open a turn.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_WRAPPER = re.compile(r"\s*<user_input(?P<attrs>\s[^>]*)?>(?P<inner>.*)</user_input>\s*", re.DOTALL)
_MODE = re.compile(r'\bmode="(?P<mode>[^"]*)"')
_MODE_NOTICE = re.compile(r"<mode_notice>.*?</mode_notice>", re.DOTALL)
# The one mark VS Code also writes inside a ``<user_input>`` wrapper (see ``is_synthetic``).
_RESUMPTION = "[TASK RESUMPTION]"
SYNTHETIC_PREFIXES = (
    "[SYSTEM]",
    "<hook_context",
    _RESUMPTION,
    "Context summary:",
    "Warning: this is a legacy conversation",
)
CANNED_CONTINUATIONS = frozenset({"The user approved switching to act mode. Continue with the approved plan now."})
_SYNTHETIC_DISPLAY_ROLES = frozenset({"system", "status", "error"})


# Made for every user text (a NamedTuple: built several times faster than a frozen dataclass).
class UserText(NamedTuple):
    inner: str  # the wrapper's inner text as is, or the whole text when unwrapped
    mode: str | None  # the wrapper's mode attribute, as is
    wrapped: bool


def unwrap(text: str) -> UserText:
    """Split a ``<user_input …>…</user_input>`` wrapper off ``text``, if it has one."""
    match = _WRAPPER.fullmatch(text) if "<user_input" in text else None
    if match is None:
        return UserText(text, None, wrapped=False)
    mode = _MODE.search(match["attrs"] or "")
    return UserText(match["inner"], mode["mode"] if mode else None, wrapped=True)


def prompt_text(user_text: UserText) -> str:
    """The prompt as the user typed it: mode notices removed, trimmed."""
    if not user_text.wrapped:
        return user_text.inner.strip()
    return _MODE_NOTICE.sub("", user_text.inner).strip()


def is_synthetic(metadata: Any, first_text: str) -> bool:
    """Whether a user message was injected by Cline rather than typed."""
    if isinstance(metadata, dict):
        return (
            metadata.get("kind") is not None
            or metadata.get("displayRole") in _SYNTHETIC_DISPLAY_ROLES
            or (metadata.get("userRunSpan") == 0 and not isinstance(metadata.get("userRunSpan"), bool))
        )
    if first_text.lstrip().startswith(SYNTHETIC_PREFIXES):
        return True
    # VS Code wraps its resumption prompt as it wraps what is typed (`<user_input mode="act">[TASK
    # RESUMPTION] …`); the other marks are never wrapped, and a typed prompt may begin with them.
    inner = unwrap(first_text).inner.strip()
    return inner.startswith(_RESUMPTION) or inner in CANNED_CONTINUATIONS
