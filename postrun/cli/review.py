"""``postrun forget``: make sessions disappear from the store for good."""

from __future__ import annotations

from typing import Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, say
from postrun.text import plural


@app.command()
@command
def forget(
    sessions: Annotated[list[str], typer.Argument(metavar="ID", help="Session ids (a unique prefix is enough).")],
    yes: Annotated[bool, typer.Option("--yes", help="Really forget them (without: list what would go).")] = False,
) -> None:
    """Remove sessions with every earlier version, search entry and capture state, leaving no byte
    of them in the store's files (it rewrites the store); a tombstone keeps them from being recorded
    again (`postrun ingest --force ID` is the only way back), also through a restore.

    Exits 75 when another process's open read kept the rewrite from reaching the file: the
    sessions are gone from every table, and a running capture finishes the scrub."""
    from postrun.agents.registry import adapters
    from postrun.store.forget import forget as forget_sessions
    from postrun.timestamps import utc_now

    _, paths = load()
    copying = [agent.kind for agent in adapters() if agent.forks_copy_lines]
    plans, left = forget_sessions(paths.db, sessions, apply=yes, now=utc_now(), copying=copying)
    verb = "forgot" if yes else "would forget"
    for plan in plans:
        versions = plural(plan.earlier_versions, "earlier version")
        raw = f"{plan.raw_copies:,} raw {'copy' if plan.raw_copies == 1 else 'copies'} of the agent's files"
        typer.echo(f"{verb} {plan.session_id}: {plural(plan.steps, 'step')}, {versions}, {raw}")
        if plan.copied_in:
            others = ", ".join(plan.copied_in)
            say(f"note: copies of {plan.session_id}'s lines stay in {others} (a fork, or its parent) unless forgotten")
    if not yes:
        say("dry run: nothing was removed; run again with --yes to forget")
    if left is not None:
        raise left.error(paths.db)
