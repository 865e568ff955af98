"""What a completed item (``event_msg`` → ``item_completed``) says, as step parts.

Pure: an item, the function call it answers (when the model called one) and, for a
compaction, the summary Codex wrote just before it. The decision is taken elsewhere
(``decisions``), from the call and the turn's policy.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from postrun.agents.codex.values import command_text, decoded, joined_texts, local_path, mapping, plain_texts, text

# Codex keeps 65,536 characters of a command's output, head and tail, around this line.
TRUNCATED = "... command output truncated for persistence ..."
FAILED_STATUSES = frozenset({"failed", "declined"})
MESSAGE_ITEMS = frozenset({"UserMessage", "AgentMessage", "Reasoning", "ContextCompaction"})


class Parts(NamedTuple):
    """A step's own content, before its place in the session is known."""

    type: str
    payload: dict[str, Any]
    outcome: str = "ok"
    content_status: str = "inline"
    error: dict[str, Any] | None = None
    suffix: str = ""  # added to the step id (``#<i>`` for the i-th change of a patch)


# The lines Codex puts before a process's own output when it tells the model.
OUTPUT_HEADERS = ("Chunk ID:", "Wall time:", "Process exited with code", "Process running with", "Exit code:")


def tool_error(message: Any) -> dict[str, Any]:
    return {"type": "tool_error", "message": message if isinstance(message, str) else ""}


def message_parts(role: str, body: str | None) -> Parts:
    """A message step; a message whose text is not there is reference-only (never an empty text)."""
    if body is None:
        return Parts("message", {"role": role}, content_status="reference_only")
    return Parts("message", {"role": role, "text": body})


def item_parts(item: dict[str, Any], name: str | None, arguments: Any, output: Any, summary: str | None) -> list[Parts]:
    """The steps of one item: ``name``/``arguments``/``output`` are the function call's when
    there was one (else None); ``summary`` is the compaction text that preceded the item."""
    kind = item.get("type")
    if kind == "UserMessage":
        return [message_parts("user", joined_texts(item.get("content"), "\n"))]
    if kind == "AgentMessage":
        return [message_parts("assistant", joined_texts(item.get("content"), "\n"))]
    if kind == "Reasoning":
        body = plain_texts(item.get("summary_text"), "\n\n") or plain_texts(item.get("raw_content"), "\n\n")
        return [message_parts("thinking", body)]
    if kind == "ContextCompaction":
        return [message_parts("system", summary)]
    if kind == "CommandExecution":
        return [_command(item, output)]
    if kind == "FileChange":
        return _file_change(item)
    if kind == "CollabAgentToolCall":
        return [_collab(item, name, arguments, output)]
    if kind == "WebSearch":
        return [_other("web_search", {"item": item}, item)]
    return [_other(f"item:{kind}" if isinstance(kind, str) and kind else "item", {"item": item}, item)]


def failed_item(item: dict[str, Any]) -> bool:
    return text(item.get("status")) in FAILED_STATUSES


def _command(item: dict[str, Any], call_output: Any) -> Parts:
    payload: dict[str, Any] = {}
    command = command_text(item.get("command"))
    if command is not None:
        payload["command"] = command
    cwd = local_path(item.get("cwd"))
    if cwd is not None:
        payload["cwd"] = cwd
    exit_code = item.get("exit_code")
    if type(exit_code) is int:
        payload["exit_code"] = exit_code
    output = item.get("aggregated_output")
    status = "inline"
    if isinstance(output, str):
        # stdout and stderr arrive interleaved in one text: there is no stderr of its own.
        payload["stdout"] = output
        if TRUNCATED in output:
            status = "reference_only"  # the rest was never written anywhere
    failed = failed_item(item) or (type(exit_code) is int and exit_code != 0)
    if not failed:
        return Parts("command", payload, content_status=status)
    said = output if isinstance(output, str) and output else _not_run(call_output)
    return Parts("command", payload, "failed", status, tool_error(said))


def _not_run(call_output: Any) -> str:
    """Why a command without output failed, from what Codex told the model: an output that is
    no process's (no ``Output:`` part), e.g. "Wall time: 0.3 seconds\naborted by user" for an
    interrupted one, without its timing lines; "" otherwise."""
    if not isinstance(call_output, str) or "Output:" in call_output:
        return ""
    return "\n".join(line for line in call_output.splitlines() if line and not line.startswith(OUTPUT_HEADERS))


def _file_change(item: dict[str, Any]) -> list[Parts]:
    changes = item.get("changes")
    entries: list[tuple[Any, Any]] = []
    if isinstance(changes, dict):
        entries = list(changes.items())
    elif isinstance(changes, list):
        entries = [(mapping(change).get("path"), change) for change in changes]
    failed = failed_item(item)
    error = tool_error(text(item.get("stderr")) or text(item.get("stdout")) or "") if failed else None
    found: list[Parts] = []
    for position, (path, change) in enumerate(entries):
        if not isinstance(path, str) or not path or not isinstance(change, dict):
            continue
        payload = _edit(path, change)
        found.append(Parts("edit", payload, "failed" if failed else "ok", "inline", error, f"#{position}"))
    if not found:
        return [_other("apply_patch", {"item": item}, item)]
    return found


def _edit(path: str, change: dict[str, Any]) -> dict[str, Any]:
    kind = change.get("type")
    if not isinstance(kind, str):
        kind = mapping(change.get("kind")).get("type")  # the app server's shape
    payload: dict[str, Any] = {"path": path, "is_full_write": kind == "add", "structured_patch": change}
    content = change.get("content")
    if kind == "add" and isinstance(content, str):
        payload["new_string"] = content
    elif kind == "delete" and isinstance(content, str):
        payload["old_string"] = content
    return payload


def _collab(item: dict[str, Any], name: str | None, arguments: Any, output: Any) -> Parts:
    tool = name or text(item.get("tool")) or "collab_agent"
    raw: dict[str, Any] = {"item": item}
    if arguments is not None:
        raw["arguments"] = arguments
    if output is not None:
        raw["output"] = output
    if tool == "spawn_agent" or item.get("tool") == "spawn_agent":
        child = spawned_thread(item, output)
        if child is not None:
            raw["actor_id"] = child
    return _other(tool, raw, item)


def spawned_thread(item: dict[str, Any] | None, output: Any) -> str | None:
    """The thread a ``spawn_agent`` call started: the item's receiver, else the one its output names."""
    receivers = mapping(item).get("receiver_thread_ids")
    if isinstance(receivers, list) and receivers and isinstance(receivers[0], str) and receivers[0]:
        return receivers[0]
    if isinstance(output, str) and output.startswith("{"):
        return text(mapping(decoded(output)).get("agent_id"))
    return None


def _other(tool_name: str, raw: dict[str, Any], item: dict[str, Any]) -> Parts:
    if failed_item(item):
        return Parts("other", {"tool_name": tool_name, "raw": raw}, "failed", error=tool_error(_reason(item)))
    return Parts("other", {"tool_name": tool_name, "raw": raw})


def _reason(item: dict[str, Any]) -> str:
    for key in ("error", "message", "stderr", "aggregated_output", "stdout"):
        found = item.get(key)
        if isinstance(found, str) and found:
            return found
        if isinstance(found, dict) and isinstance(found.get("message"), str):
            return str(found["message"])
    return ""
