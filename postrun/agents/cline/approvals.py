"""Each tool step's ``decision``, derived from Cline's auto-approval settings.

Cline records no per-call approval. A tool that ran was either auto-approved
(its category was on: ``auto``) or approved by the user (``accepted``). The
settings are read once into a small snapshot; the store keeps the snapshot of
the first ingest and hands it back later, so changing Cline's settings never
rewrites history. ``decision_for`` therefore works on a snapshot only.

Snapshots (JSON-ready):

- ``{"kind": "vscode", "actions": {<the five keys>: bool}, "settings": ...}``
  from ``globalState.json`` ``autoApprovalSettings.actions``; absent keys take
  Cline's defaults.
- ``{"kind": "cli", "tool_auto_approve": bool, "settings": ...}`` for sessions
  whose manifest ``source`` is ``cli``, from ``settings/global-settings.json``
  ``toolAutoApprove`` (absent means true, Cline's default).

``settings`` says where the values came from: ``"read"``, ``"missing"`` (no
file: defaults) or ``"unreadable"`` (a file that cannot be read, parsed or has
the wrong shape: defaults too, so settings never fail an ingest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from postrun.errors import NotFound, SourceError
from postrun.jsonio import parse_json, read_bytes, stat_fingerprint
from postrun.records import RawFile

VSCODE_DEFAULTS: dict[str, bool] = {
    "readFiles": True,
    "editFiles": True,
    "executeSafeCommands": False,
    "useBrowser": True,
    "useMcp": True,
}
_CATEGORY_TOOLS = {
    "readFiles": (
        "read_files",
        "search_codebase",
        "read_file",
        "list_files",
        "search_files",
        "list_code_definition_names",
    ),
    "editFiles": ("editor", "apply_patch", "write_to_file", "replace_in_file", "delete_file"),
    "executeSafeCommands": ("run_commands", "execute_command"),
    "useBrowser": ("fetch_web_content", "web_fetch", "web_search"),
}
CATEGORY_OF = {tool: category for category, tools in _CATEGORY_TOOLS.items() for tool in tools}
# With CLI auto-approval off, these still run without asking.
CLI_ALWAYS_AUTO = frozenset(
    {
        "read_files",
        "search_codebase",
        "fetch_web_content",
        "ask_question",
        "ask_followup_question",
        "skills",
        "submit_and_exit",
    }
)


def is_mcp_tool(name: str) -> bool:
    """MCP tools are named ``<server>__<tool>``."""
    server, sep, tool = name.partition("__")
    return bool(server and sep and tool)


def global_state_path(data_dir: Path) -> Path:
    """Cline's VS Code settings file in a Cline data dir (the sessions root's parent)."""
    return data_dir / "globalState.json"


def cli_settings_path(data_dir: Path) -> Path:
    """The Cline CLI's settings file in a Cline data dir."""
    return data_dir / "settings" / "global-settings.json"


def approval_snapshot(data_dir: Path, manifest_source: str | None, *, max_bytes: int) -> dict[str, Any]:
    """Read the settings that decide a session's decisions (see the module doc)."""
    return approval_source(data_dir, manifest_source, max_bytes=max_bytes)[0]


def approval_source(
    data_dir: Path, manifest_source: str | None, *, max_bytes: int
) -> tuple[dict[str, Any], RawFile | None]:
    """The snapshot, and the settings file's bytes it was made from (None: no file could be read)."""
    path = cli_settings_path(data_dir) if manifest_source == "cli" else global_state_path(data_dir)
    try:
        fingerprint = stat_fingerprint(path)
        if fingerprint is None:
            return snapshot_from_settings(manifest_source, None), None
        data = read_bytes(path, max_bytes=max_bytes)
    except NotFound:
        return snapshot_from_settings(manifest_source, None), None
    except SourceError:
        return _snapshot(manifest_source, {}, "unreadable"), None
    raw = RawFile(path.relative_to(data_dir).as_posix(), data, fingerprint, settings=True)
    return snapshot_from_settings(manifest_source, data, str(path)), raw


def snapshot_from_settings(manifest_source: str | None, data: bytes | None, where: str = "") -> dict[str, Any]:
    """The snapshot from the settings file's bytes (None: there was no file)."""
    if data is None:
        return _snapshot(manifest_source, {}, "missing")
    try:
        value = parse_json(data, where, "settings")
    except SourceError:
        return _snapshot(manifest_source, {}, "unreadable")
    return (
        _snapshot(manifest_source, value, "read")
        if isinstance(value, dict)
        else _snapshot(manifest_source, {}, "unreadable")
    )


def _snapshot(manifest_source: str | None, settings: dict[str, Any], status: str) -> dict[str, Any]:
    if manifest_source == "cli":
        value = settings.get("toolAutoApprove")
        return {"kind": "cli", "tool_auto_approve": value if isinstance(value, bool) else True, "settings": status}
    auto_approval = settings.get("autoApprovalSettings")
    actions = auto_approval.get("actions") if isinstance(auto_approval, dict) else None
    return {"kind": "vscode", "actions": _actions(actions), "settings": status}


def _actions(found: Any) -> dict[str, bool]:
    found = found if isinstance(found, dict) else {}
    return {
        key: found[key] if isinstance(found.get(key), bool) else default for key, default in VSCODE_DEFAULTS.items()
    }


def decision_for(tool_name: str, snapshot: dict[str, Any], *, approval_was_on: bool) -> str:
    """``auto`` or ``accepted`` for a tool call that ran.

    ``approval_was_on`` applies to CLI snapshots: a CLI session whose transcript
    shows an approval refusal ran with approval on, whatever the stored setting.
    A snapshot of an unknown kind is read as VS Code's defaults.
    """
    if snapshot.get("kind") == "cli":
        if snapshot.get("tool_auto_approve") is not False and not approval_was_on:
            return "auto"
        return "auto" if tool_name in CLI_ALWAYS_AUTO else "accepted"
    category = CATEGORY_OF.get(tool_name) or ("useMcp" if is_mcp_tool(tool_name) else None)
    if category is None:
        return "auto"  # never gated
    # ``_actions(...)[category]``, without normalizing every action for each call.
    actions = snapshot.get("actions")
    allowed = actions.get(category) if isinstance(actions, dict) else None
    return "auto" if (allowed if isinstance(allowed, bool) else VSCODE_DEFAULTS[category]) else "accepted"
