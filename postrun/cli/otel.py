"""``postrun otel push``: stored sessions as OpenTelemetry GenAI traces, to any OTLP/HTTP receiver."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load
from postrun.text import plural

otel_app = typer.Typer(help="OpenTelemetry: sessions as GenAI traces over OTLP/HTTP.", no_args_is_help=True)
app.add_typer(otel_app, name="otel")


@otel_app.command("push")
@command
def otel_push(
    sessions: Annotated[
        list[str] | None,
        typer.Argument(metavar="[SESSION_ID]...", help="Ids or unique prefixes (default: every session)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", metavar="DATE", help="Only sessions started at or after this date.")
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint",
            metavar="URL",
            help="The OTLP/HTTP traces URL (default: otel_endpoint, then OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT).",
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            metavar="K=V",
            help="A request header (repeatable; default: otel_headers, then OTEL_EXPORTER_OTLP_HEADERS).",
        ),
    ] = None,
    content: Annotated[
        bool,
        typer.Option("--content", help="Also send prompts, tool arguments and results (redacted)."),
    ] = False,
) -> None:
    """Push sessions as traces (one per session; pushing again duplicates nothing): exit 1 when the receiver fails."""
    from postrun.otel import require_sdk
    from postrun.otel.push import push_sessions
    from postrun.otel.target import resolve_target

    loaded, paths = load()
    require_sdk("otel")  # before the headers: the SDK's own parser reads them
    target = resolve_target(
        endpoint=endpoint,
        headers=header or (),
        setting_endpoint=loaded.settings.otel_endpoint,
        setting_headers=loaded.settings.otel_headers,
        environ=os.environ,
    )
    pushed = push_sessions(paths.db, target, sessions or (), since=since, content=content, home=paths.home)
    typer.echo(f"otel {target.label}: pushed {plural(pushed.sessions, 'session')} ({plural(pushed.spans, 'span')})")
