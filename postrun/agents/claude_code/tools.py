"""A tool call as a v1.2 step: its type and payload by tool, from its input and result.

``Bash`` is a command, ``Read`` a read, ``Edit``/``Write``/``MultiEdit``/``NotebookEdit``
edits; every other tool (``Agent``, ``Glob``, ``Grep``, ``TodoWrite``, ``WebFetch``,
``mcp__*``, unknown) is ``other`` with its input and result kept as they are. A call whose
input lacks what its type requires (a path) is ``other`` too. Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from postrun.agents.claude_code.results import MISSING, Call, Result, decision, outcome
from postrun.agents.claude_code.text import fits

_EXIT_CODE = re.compile(r"Exit code (-?\d+)(?:\n|$)")
_BACKGROUND_OUTPUT = re.compile(r"Output is being written to: (\S+)")
_PERSISTED_OUTPUT = re.compile(r"Full output saved to: (\S+)")
_PERSISTED_PREVIEW = "<persisted-output>"
_EDITS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


@dataclass(frozen=True, slots=True)
class CallStep:
    """What a call's step says: everything but its place in the session."""

    type: str
    decision: str
    outcome: str
    content_status: str
    payload: dict[str, Any]
    error: dict[str, str] | None = None


def call_step(call: Call, *, closed: bool, spawned: str | None = None) -> CallStep:
    """The step of ``call``; ``closed``: the process that made it ended (no result will come);
    ``spawned``: the sub-agent actor an ``Agent`` call started."""
    result = call.result
    step_outcome, error = outcome(result, closed=closed)
    inline = "inline" if result is not None else "reference_only"
    tool_input = call.input if isinstance(call.input, dict) else {}
    step_type, payload, status = _typed(call.name, tool_input, result, call.cwd)
    if step_type == "other":
        payload = _other(call, result, spawned)
    return CallStep(step_type, decision(result), step_outcome, status or inline, payload, error)


def _typed(
    name: str, tool_input: dict[str, Any], result: Result | None, cwd: str | None
) -> tuple[str, Any, str | None]:
    """(type, payload, content status when the payload sets one) for the tools with a type of their own."""
    if name == "Bash":
        payload, status = _command(tool_input, result, cwd)
        return "command", payload, status
    path = _path(tool_input, "notebook_path" if name == "NotebookEdit" else "file_path")
    if path is None:
        return "other", None, None
    if name == "Read":
        return "read", _read(path, tool_input, result), None
    if name in _EDITS:
        return "edit", _edit(name, path, tool_input, result), None
    return "other", None, None


def _path(tool_input: dict[str, Any], key: str) -> str | None:
    value = tool_input.get(key)
    return value if isinstance(value, str) and value else None


def _integer(value: Any) -> int | None:
    return value if type(value) is int and fits(value) else None


def _command(tool_input: dict[str, Any], result: Result | None, cwd: str | None) -> tuple[dict[str, Any], str | None]:
    payload: dict[str, Any] = {}
    command = tool_input.get("command")
    if isinstance(command, str):
        payload["command"] = command
    if cwd is not None:
        payload["cwd"] = cwd
    if result is None:
        return payload, None
    details = result.details
    text = result.text
    exited = _EXIT_CODE.match(text)
    # Known by its text alone (a sub-agent's file), "Exit code N" is Claude Code's only on a
    # failed call: a command that succeeded and printed it exited 0 (§7, the sub-agent rule).
    said = isinstance(result.tool_use_result, str) or (result.tool_use_result is MISSING and result.is_error)
    if exited is not None and said and fits(int(exited.group(1))):
        # "Exit code N" and the merged output after it (Claude Code merges stderr into stdout).
        payload["exit_code"] = int(exited.group(1))
        payload["stdout"] = text[exited.end() :]
        return payload, None
    if result.is_error:
        return payload, None  # refused or failed before it ran: no output
    if details is None:
        if result.tool_use_result is not MISSING:
            return payload, None
        return _from_text(payload, text)  # a sub-agent's transcript has the result's text only
    if details.get("interrupted") is True:
        return payload, None
    for key in ("stdout", "stderr"):
        if isinstance(details.get(key), str):
            payload[key] = details[key]
    if details.get("backgroundTaskId"):
        # Moved to the background when its timeout came: it had not exited, its output goes on.
        return _with_ref(payload, _BACKGROUND_OUTPUT.search(text)), "reference_only"
    payload["exit_code"] = 0
    persisted = details.get("persistedOutputPath")
    if isinstance(persisted, str) and persisted:
        payload["output_ref"] = persisted  # ``stdout`` holds the first 30000 characters
        return payload, "reference_only"
    return payload, None


def _from_text(payload: dict[str, Any], text: str) -> tuple[dict[str, Any], str | None]:
    """A result known only by its text: the output, unless Claude Code put it elsewhere."""
    background = _BACKGROUND_OUTPUT.search(text)
    if background is not None and "moved to the background" in text:
        return _with_ref(payload, background), "reference_only"
    if text.startswith(_PERSISTED_PREVIEW):
        payload["exit_code"] = 0
        return _with_ref(payload, _PERSISTED_OUTPUT.search(text)), "reference_only"
    payload["exit_code"] = 0
    payload["stdout"] = text
    return payload, None


def _with_ref(payload: dict[str, Any], found: re.Match[str] | None) -> dict[str, Any]:
    if found is not None:
        payload["output_ref"] = found.group(1).rstrip(".")
    return payload


def _read(path: str, tool_input: dict[str, Any], result: Result | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"path": path}
    offset, limit = _integer(tool_input.get("offset")), _integer(tool_input.get("limit"))
    if offset is None and tool_input.get("offset") is not None:
        return payload  # an offset that is no line number: where the read began is unknown
    if limit is not None:
        start = offset if offset is not None else 1
        if fits(start + limit - 1):
            payload["range"] = [start, start + limit - 1]
    elif offset is not None and result is not None and result.details is not None:
        read = result.details.get("file")
        if isinstance(read, dict):
            first, count = _integer(read.get("startLine")), _integer(read.get("numLines"))
            if first is not None and count is not None and fits(first + count - 1):
                payload["range"] = [offset, first + count - 1]
    return payload


def read_text(call: Call) -> str | None:
    """What a successful ``Read`` returned to the model (the file's text), if it did."""
    result = call.result
    if call.name != "Read" or result is None or result.is_error:
        return None
    details = result.details
    read = details.get("file") if details is not None else None
    if isinstance(read, dict) and isinstance(read.get("content"), str):
        return str(read["content"])
    return result.text or None


def _edit(name: str, path: str, tool_input: dict[str, Any], result: Result | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"path": path, "is_full_write": name == "Write"}
    if name in ("Edit", "Write", "NotebookEdit"):
        old, new = {"Edit": ("old_string", "new_string"), "Write": (None, "content")}.get(name, (None, "new_source"))
        if old is not None and isinstance(tool_input.get(old), str):
            payload["old_string"] = tool_input[old]
        if isinstance(tool_input.get(new), str):
            payload["new_string"] = tool_input[new]
    details = result.details if result is not None else None
    patch = details.get("structuredPatch") if details is not None else None
    # "As is (absent when there is none)": a null patch is none, and v1.2 never stores null.
    if name != "NotebookEdit" and patch is not None:
        payload["structured_patch"] = patch
    return payload


def _other(call: Call, result: Result | None, spawned: str | None) -> dict[str, Any]:
    raw: dict[str, Any] = {"input": call.input}
    if result is not None:
        raw["result"] = result.tool_use_result if result.tool_use_result is not MISSING else result.block.get("content")
    if spawned is not None:
        raw["actor_id"] = spawned
    return {"tool_name": call.name, "raw": raw}
