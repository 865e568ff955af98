"""The model-facing history (``response_item``) as steps, for a rollout without items.

Codex before items (and a rollout it never wrote items to) keeps what was said only here:
user and assistant messages, reasoning summaries and web searches. Text Codex injects as
if from the user (the environment, a sub-agent's notification, an aborted turn, the
project instructions, a skill, a command the user ran) is a ``system`` message, never a prompt.
"""

from __future__ import annotations

from typing import Any

from postrun.agents.codex.items import Parts, message_parts
from postrun.agents.codex.values import joined_texts, plain_texts

# How each text Codex injects begins (Codex's own list of "contextual" user fragments, which it
# never makes a UserMessage): the environment, a sub-agent's notification, an aborted turn, the
# project instructions (``<user_instructions>``, later "# AGENTS.md instructions for <dir>"), a
# skill's instructions, and a command the user ran with ``!`` and its output.
INJECTED = (
    "<environment_context>",
    "<subagent_notification>",
    "<turn_aborted>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skill>",
    "<user_shell_command>",
)


def history_parts(payload: dict[str, Any]) -> tuple[Parts, bool] | None:
    """(the step, whether it is a prompt) of one history line; None for what is no step
    (developer instructions, unknown kinds)."""
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        body = joined_texts(payload.get("content"), "\n")
        if role == "assistant":
            return message_parts("assistant", body), False
        if role != "user":
            return None
        if _injected(payload.get("content")):
            return message_parts("system", body), False
        return message_parts("user", body), True
    if kind == "reasoning":
        body = plain_texts(payload.get("summary"), "\n\n") or plain_texts(payload.get("content"), "\n\n")
        return message_parts("thinking", body), False
    if kind == "web_search_call":
        return Parts("other", {"tool_name": "web_search", "raw": {"item": payload}}), False
    return None


def _injected(content: Any) -> bool:
    """Codex injected the message: one of its text parts is a fragment Codex adds (Codex tells
    them apart part by part; the instructions and the environment can share a message)."""
    parts = content if isinstance(content, list) else []
    texts = (part.get("text") for part in parts if isinstance(part, dict))
    return any(isinstance(piece, str) and piece.lstrip().startswith(INJECTED) for piece in texts)
