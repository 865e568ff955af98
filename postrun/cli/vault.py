"""``postrun reingest``, ``raw``, ``backup`` and ``restore``: the raw copies and the store's backups."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, given_path, load, path_text, say
from postrun.errors import UsageError
from postrun.exitcodes import ExitCode
from postrun.text import plural, size_text

DAILY_KEEP = 7


@app.command()
@command
def reingest(
    sessions: Annotated[
        list[str] | None, typer.Argument(metavar="[ID]...", help="Session ids (a unique prefix is enough).")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every session the vault keeps.")] = False,
) -> None:
    """Rebuild sessions' records from their raw copies with this Postrun's adapter.

    Works when Cline's files are gone. Records that change keep their earlier version in the
    history, as with any ingest. Exits 1 when any session failed.
    """
    from postrun.ingest.raw import reingest as reingest_sessions

    if bool(sessions) == every:
        raise UsageError("", "name sessions to reingest, or --all (not both)")
    loaded, paths = load()
    # On a terminal only: a journal or a pipe gets the summary line alone.
    with typer.progressbar(length=0, label="reingesting", file=sys.stderr, hidden=not sys.stderr.isatty()) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)

        report = reingest_sessions(paths.db, sessions or [], max_bytes=loaded.settings.max_bytes, on_progress=progress)
    for failure in report.failures:
        say(f"error: {failure.error}")
    updated = sum(outcome.status != "unchanged" for outcome in report.outcomes)
    typer.echo(
        f"reingested {plural(len(report.outcomes), 'session')} from raw copies: {updated} changed,"
        f" {len(report.outcomes) - updated} unchanged -> {paths.db}"
    )
    if report.failures:
        raise typer.Exit(max(int(failure.error.exit_code) for failure in report.failures))


@app.command()
@command
def raw(
    session: Annotated[str, typer.Argument(metavar="ID", help="Session id (a unique prefix is enough).")],
    to: Annotated[
        Path, typer.Option("--to", parser=path_text, metavar="DIR", help="A new (or empty) folder to write into.")
    ],
    version: Annotated[
        int | None, typer.Option("--version", min=1, metavar="N", help="An earlier kept version (show --history).")
    ] = None,
) -> None:
    """Write a session's files exactly as its agent wrote them (the newest, or a kept version N)
    into DIR, laid out as in the agent's own folder (Cline's: DIR/sessions/<id>/…). Not redacted."""
    from postrun.agents.registry import adapters
    from postrun.ingest.raw import write_raw

    loaded, paths = load()
    protected = [folder for agent in adapters() for folder in agent.data_folders(loaded, os.environ)]
    written = write_raw(paths.db, session, given_path(to), version=version, protected=protected)
    kept = written.version
    typer.echo(
        f"wrote version {kept.number} of {written.versions} ({plural(len(kept.files), 'file')},"
        f" {size_text(kept.bytes)}) to {written.folder}"
    )


@app.command()
@command
def backup(
    target: Annotated[
        Path | None,
        typer.Argument(
            parser=path_text,
            metavar="[FILE]",
            help="A new file (default: <store folder>/backups/postrun-<UTC time>.db).",
        ),
    ] = None,
    keep: Annotated[
        int, typer.Option("--keep", min=1, metavar="N", help="Without FILE: keep only the newest N backups there.")
    ] = DAILY_KEEP,
) -> None:
    """A consistent, verified copy of the whole store (safe while capture runs)."""
    from postrun.store.backup import back_up, back_up_daily

    _, paths = load()
    if target is None:
        made, removed = back_up_daily(paths.db, paths.data_dir / "backups", keep=keep, now=datetime.now(UTC))
        for old in removed:
            say(f"removed old backup {old}")
    else:
        made = back_up(paths.db, given_path(target))
    typer.echo(
        f"backup {made.path}: {size_text(made.bytes)}, {plural(made.sessions, 'session')},"
        f" {plural(made.steps, 'step')}, integrity ok"
    )


@app.command()
@command
def restore(
    source: Annotated[
        Path, typer.Argument(parser=path_text, metavar="FILE", help="A backup made by `postrun backup`.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    keep_machine_id: Annotated[
        bool,
        typer.Option(
            "--keep-machine-id",
            help="Keep the backup's machine id for the team mirror even on another host (this host replaces that one).",
        ),
    ] = False,
) -> None:
    """Replace the store with a verified backup; the current store is kept as <db>.before-restore.

    A backup recorded on another host gets a new machine id (the team mirror then holds it
    beside the original's sessions, and nothing done here touches those). Refused while a
    capture runs on the store (exit 75).
    """
    import socket

    from postrun.capture.lock import CaptureLock
    from postrun.store.backup import restore as restore_store
    from postrun.store.backup import verify_backup
    from postrun.timestamps import utc_now

    _, paths = load()
    checked = verify_backup(given_path(source))
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("--yes", "restore replaces the store: confirm with --yes")
        question = f"Replace {paths.db} with {source} ({plural(checked.sessions, 'session')})?"
        try:
            agreed = typer.confirm(question, err=True)
        except typer.Abort:  # Ctrl-D or Ctrl-C at the question: a no, said as one
            agreed = False
        if not agreed:
            say(f"not restored: {paths.db} is unchanged")
            raise typer.Exit(int(ExitCode.FAILURE))
    report = restore_store(
        paths.db,
        source,
        lock=CaptureLock(paths.capture_lock, db=paths.db),
        now=utc_now(),
        host=socket.gethostname(),
        keep_machine_id=keep_machine_id,
    )
    previous = f"; the previous store is {report.previous}" if report.previous else ""
    typer.echo(
        f"restored {source} into {paths.db}: {plural(report.restored.sessions, 'session')},"
        f" {plural(report.restored.steps, 'step')}{previous}"
    )
    if report.new_machine_id is not None:
        recorded = f"recorded on {report.backup_host}" if report.backup_host else "holding no session"
        say(
            f"note: the backup was {recorded}, not on this host: new machine id {report.new_machine_id} for the"
            " team mirror (--keep-machine-id keeps the old one)"
        )
    for tombstone in report.forgotten_again:
        say(f"forgot {tombstone.session_id} again: the backup holds it; it was forgotten at {tombstone.forgotten_at}")
    if report.scrub_left is not None:
        raise report.scrub_left.error(paths.db)
