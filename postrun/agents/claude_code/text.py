"""What a ``user`` line says, and whether a person said it: pure functions over one record."""

from __future__ import annotations

from typing import Any

from postrun import schema

# Text Claude Code itself puts in a user line: slash-command output, background task
# notices, ``!`` shell escapes. Such a line never opens a turn.
INJECTED_PREFIXES = (
    "<local-command-caveat>",
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<task-notification>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)


def text_of(content: Any) -> str | None:
    """A string content as is; the text blocks of a list joined with newlines; else None."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [block["text"] for block in content if _is_text(block)]
    return "\n".join(texts) if texts else None


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def has_tool_results(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def is_prompt(record: dict[str, Any], text: str | None) -> bool:
    """A line a person typed: not one Claude Code injected (a summary, a notice, a command's output)."""
    if record.get("isMeta") is True or record.get("isCompactSummary") is True:
        return False
    if record.get("isSidechain") is True:
        # A sub-agent's line: Claude Code before the sub-agents' own files wrote them in the
        # main transcript, its task's prompt first. Only the main agent's person prompts (§6).
        return False
    if record.get("turnOrigin") == "task_notification" or record.get("promptSource") == "system":
        return False
    origin = record.get("origin")
    if isinstance(origin, dict) and origin.get("kind") == "task-notification":
        return False
    return text is None or not text.lstrip().startswith(INJECTED_PREFIXES)


def timestamp(record: dict[str, Any]) -> str | None:
    """The record's ``timestamp`` when it is a v1.2 timestamp, else None."""
    value = record.get("timestamp")
    return value if isinstance(value, str) and schema.is_timestamp(value) else None


# The store's integers (SQLite, orjson) hold -2**63 .. 2**63 - 1: a number from a transcript
# beyond that is no count Claude Code kept, and would abort the whole session's write.
LARGEST = 2**63 - 1


def fits(value: int) -> bool:
    return -LARGEST - 1 <= value <= LARGEST


def text_field(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
