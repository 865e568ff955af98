"""The model-facing history (``response_item``) as steps, for a rollout without items.

Codex before items (and a rollout it never wrote items to) keeps what was said only here:
user and assistant messages, reasoning summaries and web searches. Text Codex injects as
if from the user (the environment, a sub-agent's notification, an aborted turn, the
project instructions) is a ``system`` message, never a prompt.
"""

from __future__ import annotations

from typing import Any

from postrun.agents.codex.items import Parts, message_parts
from postrun.agents.codex.values import joined_texts, plain_texts

INJECTED = ("<environment_context>", "<subagent_notification>", "<turn_aborted>", "<user_instructions>")


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
        if body is not None and body.lstrip().startswith(INJECTED):
            return message_parts("system", body), False
        return message_parts("user", body), True
    if kind == "reasoning":
        body = plain_texts(payload.get("summary"), "\n\n") or plain_texts(payload.get("content"), "\n\n")
        return message_parts("thinking", body), False
    if kind == "web_search_call":
        return Parts("other", {"tool_name": "web_search", "raw": {"item": payload}}), False
    return None
