"""How each MCP client registers ``postrun mcp``: the snippet ``postrun mcp --print-config`` prints (pure)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from postrun.errors import UsageError

CLIENTS = ("claude-code", "codex", "cline")
SERVER_NAME = "postrun"


def client_config(client: str, command: Sequence[str]) -> str:
    """The text that registers ``command`` (the program and its arguments) as the ``postrun`` server."""
    program, *args = command
    if client == "claude-code":
        # User scope: recall in every project, not only the folder it was added in.
        return f"claude mcp add --scope user --transport stdio {SERVER_NAME} -- {shlex.join(command)}\n"
    if client == "codex":
        return (
            "# ~/.codex/config.toml\n"
            f"[mcp_servers.{SERVER_NAME}]\n"
            f"command = {_toml_string(program)}\n"
            f"args = [{', '.join(_toml_string(arg) for arg in args)}]\n"
        )
    if client == "cline":
        # Cline's MCP settings file (MCP Servers > Configure), or ~/.cline/data/settings/cline_mcp_settings.json.
        server = {"command": program, "args": args, "disabled": False, "autoApprove": []}
        return json.dumps({"mcpServers": {SERVER_NAME: server}}, indent=2) + "\n"
    raise UsageError("--print-config", f"unknown client {client!r} (known: {', '.join(CLIENTS)})")


def _toml_string(value: str) -> str:
    # A TOML basic string has JSON's escapes.
    return json.dumps(value, ensure_ascii=False)
