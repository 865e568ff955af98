"""What a ``tool_result`` block says: items, whole-call errors, refusals.

Batched tools store a list of items ``{query, result, success, error?}``; single
tools store one such object as a JSON-encoded string; a tool that throws stores
``{"error": …}`` with ``is_error: true``; a session migrated from Cline's older format
keeps a result's content blocks (``[{"type": "text", "text": …}]``), JSON-encoded. Refusal
wordings are only trusted where an error is reported (a whole-call error or a failed item's
``error``), never in successful output: a plain-text result without ``is_error`` is a
question's answer or an older tool's output, and a failure only with ``is_error``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

REFUSAL_WORDINGS = (
    "User denied the tool execution",
    "The user denied this edit",
    "This tool call was rejected by the user and not executed",
    "requires approval in a TTY session",
    "Desktop tool approval IPC is not configured",
    "is disabled by policy",
    "blocked in plan mode",
)
# Refusals that only happen when approval is on: a CLI session showing one ran with approval on.
_APPROVAL_ON_WORDINGS = (
    "requires approval in a TTY session",
    "Desktop tool approval IPC is not configured",
    "rejected by the user",
)
# Cline's own wording names the tool (the contract: `Tool "x" was not approved`); a bare "was not
# approved" is any tool's error (an MCP server's "the PR was not approved"), not the user refusing.
_NOT_APPROVED = re.compile(r'Tool "[^"\n]*" was not approved')
# A person's "no" at the CLI's approval prompt, as CLIs before the SDK's shared wording wrote it:
# a refusal, and one only a session with approval on can show.
_DENIED = re.compile(r'Tool "[^"\n]*" was denied by user')
# What makes a result's text worth decoding to look for those.
_APPROVAL_HINTS = (*_APPROVAL_ON_WORDINGS, "was denied by user")
_UNKNOWN_TOOL = re.compile(r"NoSuchToolError|unknown tool|no such tool", re.IGNORECASE)


def decode_json_text(value: Any) -> Any:
    """A string that holds a JSON list or object, decoded; anything else as is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        if isinstance(decoded, list | dict):
            return decoded
    return value


# Made for every call (a NamedTuple: built several times faster than a frozen dataclass).
class ToolResult(NamedTuple):
    value: Any  # the content, with a JSON-encoded string decoded
    is_error: bool
    whole_error: str | None  # the message of a whole-call error, if the call failed as a whole
    items: list[Any] | None  # the items of a batched result

    @property
    def text(self) -> str:
        """The result as text, for error messages."""
        return _as_text(self.value)


def read_result(block: dict[str, Any]) -> ToolResult:
    raw = block.get("content")
    value = decode_json_text(raw)
    if isinstance(value, list) and value is not raw and not all(isinstance(item, dict) for item in value):
        value = raw  # text that happens to be a JSON list (e.g. a command's output), not items
    text = _blocks_text(value)
    if text is not None:
        value = text
    is_error = block.get("is_error") is True
    whole_error: str | None = None
    if isinstance(value, dict) and value.get("error") not in (None, "") and "success" not in value:
        whole_error = _as_text(value["error"])
    elif isinstance(value, str) and is_error:
        whole_error = value
    items = value if isinstance(value, list) else None
    return ToolResult(value, is_error, whole_error, items)


def _blocks_text(value: Any) -> str | None:
    """The text of a result kept as content blocks (text and images, at least one text), the
    text blocks joined by a newline; None for anything else (a batched tool's items)."""
    if not isinstance(value, list) or not value:
        return None
    texts: list[str] = []
    for block in value:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind != "image":
            return None
    return "\n".join(texts) if texts else None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def item_failed(item: Any, result: ToolResult) -> bool:
    return (
        result.is_error or result.whole_error is not None or (isinstance(item, dict) and item.get("success") is False)
    )


def item_error_text(item: Any) -> str | None:
    """The error a failed item reports itself (``error``), if any."""
    if isinstance(item, dict) and isinstance(item.get("error"), str) and item["error"]:
        return str(item["error"])
    return None


def is_refusal(message: str) -> bool:
    return (
        any(wording in message for wording in REFUSAL_WORDINGS)
        or _NOT_APPROVED.search(message) is not None
        or _DENIED.search(message) is not None
    )


def shows_approval_on(message: str) -> bool:
    """Whether a refusal in ``message`` is one only a session with approval on can show."""
    return any(wording in message for wording in _APPROVAL_ON_WORDINGS) or _DENIED.search(message) is not None


def is_unknown_tool(message: str) -> bool:
    return _UNKNOWN_TOOL.search(message) is not None


def error_reports(block: dict[str, Any]) -> Iterator[str]:
    """Every error message a result block reports where refusals are trusted.

    Cheap on purpose (it runs over the whole transcript): JSON text is only
    decoded when it mentions one of the approval wordings.
    """
    content = block.get("content")
    if isinstance(content, str):
        if any(hint in content for hint in _APPROVAL_HINTS):
            result = read_result(block)
            if result.whole_error is not None:
                yield result.whole_error
            yield from _failed_item_errors(result.items or ([result.value] if isinstance(result.value, dict) else []))
    elif isinstance(content, list):
        yield from _failed_item_errors(content)


def _failed_item_errors(items: list[Any]) -> Iterator[str]:
    for item in items:
        if isinstance(item, dict) and item.get("success") is False:
            error = item_error_text(item)
            if error is not None:
                yield error
