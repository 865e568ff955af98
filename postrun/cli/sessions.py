"""Commands over stored sessions: ``ingest``, ``sessions``, ``show``, ``export``, ``search``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer

from postrun.cli.app import app
from postrun.cli.common import check_agent, command, load, open_store, say
from postrun.errors import PostrunError, UsageError
from postrun.exitcodes import ExitCode
from postrun.paths import Paths


@app.command()
@command
def ingest(
    targets: Annotated[
        list[str], typer.Argument(help="Session ids, session folders, messages files or sessions roots.")
    ],
    agent: Annotated[str, typer.Option("--agent", help="The agent whose files these are.")] = "cline",
) -> None:
    """Ingest sessions by hand: `postrun ingest --agent cline <id|folder|messages file|sessions root>...`."""
    from postrun.ingest import Ingester, ingest_targets

    check_agent(agent)
    loaded, paths = load()
    with open_store(paths) as database:
        ingester = Ingester(database, max_bytes=loaded.settings.max_bytes)
        report = ingest_targets(ingester, targets, default_root=paths.cline_default_sessions)
    for skipped in report.skipped:
        if skipped.warn:
            # Escaped: a folder name can hold a newline or a terminal escape sequence.
            say(f"warning: {str(skipped.path)!a}: skipped ({skipped.reason})")
    for outcome in report.outcomes:
        typer.echo(
            f"{outcome.status} {agent} session {outcome.session_id}: {outcome.steps} steps, {outcome.turns} turns,"
            f" {outcome.segments} segments -> {paths.db}"
        )
    for failure in report.failures:
        say(f"error: {failure.error}")
    if report.failures:
        raise typer.Exit(int(ExitCode.FAILURE))
    if not report.outcomes:
        say("warning: no sessions found")


@app.command()
@command
def sessions(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's sessions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="At most this many.")] = None,
) -> None:
    """List stored sessions, newest first."""
    from postrun.store.db import StoreMissing
    from postrun.store.query import list_sessions

    check_agent(agent)
    _, paths = load()
    try:
        with open_store(paths, create=False) as database:
            summaries = list_sessions(database, agent=agent, limit=limit)
    except StoreMissing:
        summaries = []
    if as_json:
        typer.echo(orjson.dumps([s.as_json() for s in summaries], option=orjson.OPT_INDENT_2).decode())
        return
    for s in summaries:
        state = "open " if s.open else "ended"
        failed = f"{s.failed_steps} failed" if s.failed_steps else ""
        started = s.started_at[:16].replace("T", " ") + "Z"
        typer.echo(f"{started}  {s.agent}  {s.id}  {state}  {s.steps:>5} steps  {failed:<9}  {_cut(s.title)}")


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _session_reference_error(paths: Paths, reference: str) -> PostrunError:
    return PostrunError("", f"no session {reference} in {paths.db}")


@app.command()
@command
def show(
    session: Annotated[str, typer.Argument(help="Session id (a unique prefix is enough).")],
    with_history: Annotated[
        bool, typer.Option("--history", help="Also list earlier versions of changed steps.")
    ] = False,
) -> None:
    """A readable timeline of one session, by turn."""
    from postrun import render
    from postrun.store.db import StoreMissing
    from postrun.store.query import history, load_envelope, resolve_session_id, session_details

    _, paths = load()
    try:
        with open_store(paths, create=False) as database:
            session_id = resolve_session_id(database, session)
            envelope = load_envelope(database, session_id)
            details = session_details(database, session_id)
            entries = history(database, session_id) if with_history else None
    except StoreMissing:
        raise _session_reference_error(paths, session) from None
    typer.echo("\n".join(render.timeline(envelope, details, entries)))


@app.command()
@command
def export(
    session: Annotated[str, typer.Argument(help="Session id (a unique prefix is enough).")],
    export_format: Annotated[
        str, typer.Option("--format", "-f", help="json (v1.2 envelope), jsonl or markdown.")
    ] = "json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
) -> None:
    """Export one session."""
    from postrun.export import FORMATS, render_export
    from postrun.paths import write_private_file
    from postrun.store.db import StoreMissing

    if export_format not in FORMATS:
        raise UsageError("--format", f"unknown format {export_format!r} (known: {', '.join(FORMATS)})")
    _, paths = load()
    try:
        with open_store(paths, create=False) as database:
            content = render_export(database, session, export_format)
    except StoreMissing:
        raise _session_reference_error(paths, session) from None
    if output is None:
        sys.stdout.buffer.write(content)
        sys.stdout.flush()
    else:
        write_private_file(output, content)


@app.command()
@command
def search(
    query: Annotated[str, typer.Argument(help="Words that must all appear (command, output, text, path, tool).")],
    step_type: Annotated[str | None, typer.Option("--type", help="command, edit, read, message or other.")] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Only failed steps.")] = False,
    since: Annotated[str | None, typer.Option("--since", help="Only steps at or after this date (2026-11-29).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many hits.")] = 50,
) -> None:
    """Full-text search over every stored step."""
    from postrun.store.db import StoreMissing
    from postrun.store.query import search as search_steps

    _, paths = load()
    try:
        with open_store(paths, create=False) as database:
            hits = search_steps(database, query, step_type=step_type, failed=failed, since=since, limit=limit)
    except StoreMissing:
        hits = []
    if as_json:
        typer.echo(orjson.dumps([hit.as_json() for hit in hits], option=orjson.OPT_INDENT_2).decode())
        return
    for hit in hits:
        typer.echo(f"{hit.session_id}  #{hit.seq} {hit.step_id}  {hit.at}  {hit.type} {hit.outcome}  {hit.snippet}")
