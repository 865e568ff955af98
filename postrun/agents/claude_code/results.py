"""A tool call and its result as Claude Code wrote them, and what they say of the call:
who decided it (``decision``), how it went (``outcome``, ``error``). Pure functions.

A call is a ``tool_use`` block of an ``assistant`` line; its result is a ``tool_result``
block of a later ``user`` line, with the line's ``toolUseResult`` (the tool's own account;
absent in sub-agent transcripts), ``permissionDecision`` and, when refused, ``toolDenialKind``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from postrun.agents.claude_code.text import text_of

MISSING: Any = object()  # a field the line does not have (``None`` would be JSON's null)
# Who decided for the person: a settings rule, a permission mode, a command-line flag, a hook.
AUTOMATIC_SOURCES = frozenset({"config", "hook"})
_NO_SUCH_TOOL = re.compile(r"(?:<tool_use_error>)?(?:Error: )?No such tool available")
ENDED_UNANSWERED = "no result recorded; the process ended"


@dataclass(frozen=True, slots=True)
class Result:
    """A ``tool_result`` block and the facts of its line about that call."""

    block: dict[str, Any]
    tool_use_result: Any = MISSING  # the line's ``toolUseResult``, when it answers this call alone
    permission: Any = MISSING  # the line's ``permissionDecision``
    denial: Any = MISSING  # the line's ``toolDenialKind``

    @property
    def text(self) -> str:
        """The result's text: the block's string content, or its text blocks joined."""
        return text_of(self.block.get("content")) or ""

    @property
    def is_error(self) -> bool:
        return self.block.get("is_error") is True

    @property
    def details(self) -> dict[str, Any] | None:
        """``toolUseResult`` when it is an object (a tool's success, mostly)."""
        value = self.tool_use_result
        return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Call:
    """A ``tool_use`` block, where it was written, and its result once one came."""

    id: str  # the step's id (the tool_use id; prefixed in a sub-agent's transcript)
    tool_id: str  # the tool_use id as written
    name: str
    input: Any
    cwd: str | None  # the ``cwd`` of the tool_use line
    result: Result | None = None


def decision(result: Result | None) -> str:
    """``rejected`` when refused; ``accepted`` when a person allowed it; ``n/a`` for a tool the
    session does not have (nobody decided); else ``auto`` (a rule, a mode, a flag, a hook, or
    no permission check at all: the call failed validation first, or has no result yet)."""
    if result is None:
        return "auto"
    if _NO_SUCH_TOOL.match(result.text) is not None:
        return "n/a"
    permission = result.permission
    if isinstance(permission, dict):
        if permission.get("decision") == "reject":
            return "rejected"
        source = permission.get("source")
        if permission.get("decision") == "accept" and isinstance(source, str) and source not in AUTOMATIC_SOURCES:
            return "accepted"
    return "auto"


def outcome(result: Result | None, *, closed: bool) -> tuple[str, dict[str, str] | None]:
    """(outcome, error): ``failed`` with the result's text as the error, ``ok``, or ``pending``
    while no result came; ``closed`` (the process that made the call ended) makes that final."""
    if result is None:
        if closed:
            return "failed", {"type": "tool_error", "message": ENDED_UNANSWERED}
        return "pending", None
    if result.is_error:
        # A resume writes ``interrupted`` for a call its killed process left without a result:
        # the call was allowed and ran, and nobody refused it.
        refused = isinstance(result.denial, str) and result.denial not in ("", "interrupted")
        return "failed", {"type": "permission_denied" if refused else "tool_error", "message": result.text}
    return "ok", None
