"""``postrun mcp``: recall for agents, an MCP server over stdio (or the snippet that registers it)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, rerun_command, say, state


@app.command(name="mcp")
@command
def mcp_command(
    print_config: Annotated[
        str | None,
        typer.Option(
            "--print-config",
            metavar="CLIENT",
            help="Print how claude-code, codex or cline registers this server, and exit.",
        ),
    ] = None,
) -> None:
    """Serve the store to an agent over MCP (stdio), read-only: search, list_sessions, get_session,
    get_steps, file_history. Secrets are masked; the store is never written."""
    from postrun.recall.clients import client_config

    loaded, paths = load()
    if print_config is not None:
        typer.echo(client_config(print_config, rerun_command(loaded, "mcp")), nl=False)
        _warn_of_the_shells_store(print_config)
        return
    from postrun.recall.citations import ReviewApp
    from postrun.recall.server import serve_stdio
    from postrun.recall.tools import Recall

    serve_stdio(Recall(paths.db, ReviewApp(paths.web_state), clock=lambda: datetime.now(UTC), home=str(paths.home)))


def _warn_of_the_shells_store(client: str) -> None:
    """The snippet names the store only when ``--db`` does: a client starts ``postrun mcp`` with
    its own environment, which may not hold this shell's POSTRUN_DB (it then serves the default
    store, empty for someone who keeps theirs elsewhere)."""
    from postrun.paths import env_value
    from postrun.settings import env_variable

    variable = env_variable("db")
    if state.db is None and env_value(os.environ, variable) is not None:
        say(
            f"warning: {variable} is set in this shell, and {client} may start `postrun mcp` without it:"
            f" `postrun --db PATH mcp --print-config {client}` names the store in the snippet"
        )
