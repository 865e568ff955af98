"""One Cline tool call (a ``tool_use`` and its ``tool_result``) as step drafts.

Batched tools make one step per item, single tools one step (``apply_patch`` one
per file). A draft has everything of a step except where it sits in the session
(ids, seq, turn, time), which ``steps`` adds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from postrun.agents.cline.approvals import decision_for
from postrun.agents.cline.commands import parse_command_result, query_matches, render_command
from postrun.agents.cline.inputs import read_request, requests_of
from postrun.agents.cline.patch import parse_patch, parse_search_replace
from postrun.agents.cline.results import (
    ToolResult,
    decode_json_text,
    is_refusal,
    is_unknown_tool,
    item_error_text,
    item_failed,
    read_result,
)

ERROR_TYPE = "cline_tool_error"
BATCHED_KINDS = {
    "run_commands": "commands",
    "execute_command": "commands",  # legacy name
    "read_files": "reads",
    "read_file": "reads",  # legacy name
    "search_codebase": "searches",
    "fetch_web_content": "fetches",
}
_READ_QUERY_RANGE = re.compile(r":\d+-(?:\d+|EOF)\Z")  # read_files queries: path:start-end


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Session-wide facts a tool call's steps depend on."""

    cwd: str | None
    approvals: dict[str, Any]
    approval_was_on: bool
    ended_status: str | None  # None while the session is open, else its status


# Made for every step (a NamedTuple: built several times faster than a frozen dataclass).
class Draft(NamedTuple):
    part: int  # the <i> of the step id <tool_use_id>#<i>
    type: str
    payload: dict[str, Any]
    decision: str
    outcome: str
    content_status: str
    error: dict[str, str] | None
    read_text: str | None = None  # what a read returned (scanned for secrets, never stored)


# Made for every step (a NamedTuple: built several times faster than a frozen dataclass).
class _Status(NamedTuple):
    decision: str
    outcome: str
    content_status: str
    error: dict[str, str] | None

    def draft(
        self, part: int, step_type: str, payload: dict[str, Any], content_status: str = "", read_text: str | None = None
    ) -> Draft:
        status = content_status or self.content_status
        return Draft(part, step_type, payload, self.decision, self.outcome, status, self.error, read_text)


def map_tool_call(name: str, tool_input: Any, result_block: dict[str, Any] | None, ctx: ToolContext) -> list[Draft]:
    """The drafts of one call; ``result_block`` is None while its result is not written."""
    tool_input = decode_json_text(tool_input)
    result = read_result(result_block) if result_block is not None else None
    kind = BATCHED_KINDS.get(name)
    if kind is not None:
        return _batched(name, kind, tool_input, result, ctx)
    return _single(name, tool_input, result, ctx)


def _error(message: str) -> dict[str, str]:
    return {"type": ERROR_TYPE, "message": message}


def _status(name: str, item: Any, result: ToolResult | None, ctx: ToolContext) -> _Status:
    decision = decision_for(name, ctx.approvals, approval_was_on=ctx.approval_was_on)
    if result is None:
        if ctx.ended_status is None:
            return _Status(decision, "pending", "reference_only", None)
        message = f"no result recorded; session ended ({ctx.ended_status})"
        return _Status(decision, "failed", "reference_only", _error(message))
    if not item_failed(item, result):
        return _Status(decision, "ok", "inline", None)
    reported = [text for text in (item_error_text(item), result.whole_error) if text]
    if any(is_unknown_tool(text) for text in reported):
        decision = "n/a"  # the tool does not exist: nobody approved or refused it
    elif any(is_refusal(text) for text in reported):
        decision = "rejected"
    message = reported[0] if reported else _item_text(item, result)
    return _Status(decision, "failed", "inline", _error(message))


def _item_text(item: Any, result: ToolResult) -> str:
    if isinstance(item, dict) and isinstance(item.get("result"), str):
        return str(item["result"])
    if isinstance(item, str):
        return item
    return result.text


def _query(item: Any) -> str | None:
    query = item.get("query") if isinstance(item, dict) else None
    return query if isinstance(query, str) else None


# --- batched tools: one step per item ---------------------------------------------


def _batched(name: str, kind: str, tool_input: Any, result: ToolResult | None, ctx: ToolContext) -> list[Draft]:
    requests = requests_of(kind, tool_input)
    pairs = _pairs(kind, requests, result)
    if not pairs:
        return [_other(name, tool_input, result, ctx)]
    step = _ITEM_STEPS[kind]
    return [step(i, name, request, item, result, ctx) for i, (request, item) in enumerate(pairs)]


def _pairs(kind: str, requests: list[Any], result: ToolResult | None) -> list[tuple[Any, Any]]:
    """(request, result item) per step; the item is None when the result is not a list."""
    if result is None or result.items is None:
        # Pending, a whole-call error or a single value: it applies to every request.
        return [(request, None) for request in requests]
    items = result.items
    if len(items) == len(requests):
        return list(zip(requests, items, strict=True))
    if kind == "commands":
        return _match_commands(requests, items)
    return _match_by_query(kind, requests, items)


def _match_commands(requests: list[Any], items: list[Any]) -> list[tuple[Any, Any]]:
    """Cline joins a heredoc split across list elements into one command: rejoin them."""
    commands = [render_command(request) or "" for request in requests]
    pairs: list[tuple[Any, Any]] = []
    start = 0
    for item in items:
        query = _query(item)
        command: str | None = query
        for end in range(start, len(commands) if query is not None else start):
            joined = "\n".join(commands[start : end + 1])
            if query_matches(query or "", joined):
                command, start = joined, end + 1
                break
        pairs.append((command, item))
    return pairs


def _request_key(kind: str, request: Any) -> str | None:
    if kind == "reads":
        return read_request(request)[0]
    if kind == "fetches":
        url = request.get("url") if isinstance(request, dict) else None
        return url if isinstance(url, str) else None
    return request if isinstance(request, str) else None


def _query_key(kind: str, query: str) -> str:
    if kind == "reads":
        return _strip_read_range(query)
    return query


def _strip_read_range(query: str) -> str:
    return _READ_QUERY_RANGE.sub("", query)


def _match_by_query(kind: str, requests: list[Any], items: list[Any]) -> list[tuple[Any, Any]]:
    used: set[int] = set()
    pairs: list[tuple[Any, Any]] = []
    for item in items:
        query = _query(item)
        found = None
        if query is not None:
            key = _query_key(kind, query)
            found = next(
                (i for i, request in enumerate(requests) if i not in used and _request_key(kind, request) == key),
                None,
            )
        if found is None:
            pairs.append((None, item))
        else:
            used.add(found)
            pairs.append((requests[found], item))
    return pairs


def _command_step(i: int, name: str, request: Any, item: Any, result: ToolResult | None, ctx: ToolContext) -> Draft:
    status = _status(name, item, result, ctx)
    payload: dict[str, Any] = {}
    command = render_command(request) or _query(item)
    if command is not None:
        payload["command"] = command
    if ctx.cwd is not None:
        payload["cwd"] = ctx.cwd
    text = _output_text(item, result)
    if text is None:
        return status.draft(i, "command", payload)
    error = item_error_text(item)
    if text == "" and status.outcome == "failed" and error is not None and error.startswith("Command failed:"):
        # Timed out, aborted or not started: the output was not kept (not the same as empty).
        return status.draft(i, "command", payload, "reference_only")
    succeeded = isinstance(item, dict) and item.get("success") is True
    output = parse_command_result(text, succeeded=succeeded)
    payload.update(output.payload_fields())
    return status.draft(i, "command", payload, "reference_only" if output.output_ref else "")


def _output_text(item: Any, result: ToolResult | None) -> str | None:
    """The output text of one command or read; None when it did not run or has no result."""
    if result is None or result.whole_error is not None:
        return None
    if isinstance(item, dict):
        text = item.get("result")
        return text if isinstance(text, str) else None
    if item is None:
        return result.value if isinstance(result.value, str) else None
    return item if isinstance(item, str) else None


def _read_step(i: int, name: str, request: Any, item: Any, result: ToolResult | None, ctx: ToolContext) -> Draft:
    path, line_range = read_request(request)
    query = _query(item)
    if path is None and query:
        path = _strip_read_range(query) or None
    if path is None:
        return _batched_other(i, name, request, item, result, ctx)
    payload: dict[str, Any] = {"path": path}
    if line_range is not None:
        payload["range"] = line_range
    return _status(name, item, result, ctx).draft(i, "read", payload, read_text=_output_text(item, result))


def _batched_other(i: int, name: str, request: Any, item: Any, result: ToolResult | None, ctx: ToolContext) -> Draft:
    raw: dict[str, Any] = {}
    if request is not None:
        raw["input"] = request
    if result is not None:
        raw["result"] = item if item is not None else result.value
    return _status(name, item, result, ctx).draft(i, "other", {"tool_name": name, "raw": raw})


_ItemStep = Callable[[int, str, Any, Any, ToolResult | None, ToolContext], Draft]
_ITEM_STEPS: dict[str, _ItemStep] = {
    "commands": _command_step,
    "reads": _read_step,
    "searches": _batched_other,
    "fetches": _batched_other,
}


# --- single tools ------------------------------------------------------------------


def _single(name: str, tool_input: Any, result: ToolResult | None, ctx: ToolContext) -> list[Draft]:
    if name == "apply_patch":
        return _apply_patch(tool_input, result, ctx)
    payload = _EDIT_PAYLOADS[name](tool_input) if name in _EDIT_PAYLOADS else None
    if payload is None:
        return [_other(name, tool_input, result, ctx)]
    return [_single_status(name, result, ctx).draft(0, "edit", payload)]


def _single_status(name: str, result: ToolResult | None, ctx: ToolContext) -> _Status:
    item = result.value if result is not None and isinstance(result.value, dict) else None
    return _status(name, item, result, ctx)


def _other(name: str, tool_input: Any, result: ToolResult | None, ctx: ToolContext) -> Draft:
    raw: dict[str, Any] = {"input": tool_input}
    if result is not None:
        raw["result"] = result.value
    return _single_status(name, result, ctx).draft(0, "other", {"tool_name": name, "raw": raw})


def _text_field(tool_input: dict[str, Any], *keys: str) -> str | None:
    return next((tool_input[key] for key in keys if isinstance(tool_input.get(key), str)), None)


def _edit_path(tool_input: Any) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    path = tool_input.get("path")
    return path if isinstance(path, str) and path else None


def _editor_payload(tool_input: Any) -> dict[str, Any] | None:
    path = _edit_path(tool_input)
    if path is None:
        return None
    old = _text_field(tool_input, "old_text", "old_str")
    new = _text_field(tool_input, "new_text", "new_str", "content")
    inserts = tool_input.get("insert_line") is not None
    payload: dict[str, Any] = {"path": path, "is_full_write": old is None and not inserts}
    if old is not None:
        payload["old_string"] = old
    if new is not None:
        payload["new_string"] = new
    return payload


def _write_payload(tool_input: Any) -> dict[str, Any] | None:
    path = _edit_path(tool_input)
    if path is None:
        return None
    payload: dict[str, Any] = {"path": path, "is_full_write": True}
    content = _text_field(tool_input, "content")
    if content is not None:
        payload["new_string"] = content
    return payload


def _replace_payload(tool_input: Any) -> dict[str, Any] | None:
    path = _edit_path(tool_input)
    if path is None:
        return None
    payload: dict[str, Any] = {"path": path, "is_full_write": False}
    diff = _text_field(tool_input, "diff")
    blocks = parse_search_replace(diff) if diff is not None else None
    if blocks is not None:
        payload["old_string"], payload["new_string"] = blocks
    return payload


_EDIT_PAYLOADS: dict[str, Callable[[Any], dict[str, Any] | None]] = {
    "editor": _editor_payload,
    "write_to_file": _write_payload,  # legacy name
    "replace_in_file": _replace_payload,  # legacy name
}


def _apply_patch(tool_input: Any, result: ToolResult | None, ctx: ToolContext) -> list[Draft]:
    text = tool_input if isinstance(tool_input, str) else None
    if isinstance(tool_input, dict):
        text = _text_field(tool_input, "input", "patch")
    sections = parse_patch(text) if text is not None else None
    if sections is None:
        return [_other("apply_patch", tool_input, result, ctx)]
    status = _single_status("apply_patch", result, ctx)
    return [status.draft(i, "edit", section.edit_payload()) for i, section in enumerate(sections)]
