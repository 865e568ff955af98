"""A batched tool's requests, from whatever shape the model sent.

Cline stores tool inputs exactly as the model emitted them, so alternative shapes
occur: a string instead of a list, a JSON-encoded list in a string, ``{command}``
instead of ``{commands}``, a bare list or a bare string.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from postrun.agents.cline.results import decode_json_text

# Per batched tool: the keys that hold its list of requests, and the keys that
# make the input itself a single request.
_LIST_KEYS = {
    "commands": ("commands", "command", "cmd"),
    "reads": ("files", "file_paths", "paths"),
    "searches": ("queries", "query"),
    "fetches": ("requests",),
}
_SINGLE_REQUEST_KEYS = {
    "commands": ("args",),
    "reads": ("path", "file_path", "filePath"),
    "searches": (),
    "fetches": ("url",),
}
PATH_KEYS = _SINGLE_REQUEST_KEYS["reads"]


def requests_of(kind: str, tool_input: Any) -> list[Any]:
    """The requests of a batched tool of ``kind`` (``commands``, ``reads``, ...)."""
    tool_input = decode_json_text(tool_input)
    if not isinstance(tool_input, dict):
        return _listed(tool_input)
    if any(key in tool_input for key in _SINGLE_REQUEST_KEYS[kind]) and (kind != "commands" or "command" in tool_input):
        return [tool_input]
    for key in _LIST_KEYS[kind]:
        if key in tool_input:
            return _listed(tool_input[key])
    return []


def _listed(value: Any) -> list[Any]:
    value = decode_json_text(value)
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def read_request(request: Any) -> tuple[str | None, list[int] | None]:
    """A read request's path and ``[start_line, end_line]`` (only when both are integers)."""
    if isinstance(request, str):
        return (request or None), None
    if not isinstance(request, dict):
        return None, None
    path = next((request[key] for key in PATH_KEYS if isinstance(request.get(key), str) and request[key]), None)
    start, end = request.get("start_line"), request.get("end_line")
    if _is_int(start) and _is_int(end):
        return path, [start, end]
    return path, None


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
