"""``postrun mirror status|push``: the team mirror (PostgreSQL)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, say
from postrun.errors import ConfigError
from postrun.exitcodes import ExitCode
from postrun.text import plural

if TYPE_CHECKING:
    from postrun.mirror.target import MirrorTarget
    from postrun.settings import LoadedSettings

mirror_app = typer.Typer(help="The team mirror: this store's sessions pushed to PostgreSQL.", no_args_is_help=True)
app.add_typer(mirror_app, name="mirror")


def _target(loaded: LoadedSettings) -> MirrorTarget:
    """The configured mirror, its driver there and its options ones libpq accepts (else 78)."""
    from postrun.mirror import usable_target
    from postrun.mirror.target import mirror_target

    url = loaded.settings.mirror_url
    if url is None:
        raise ConfigError("mirror_url", f"not set (POSTRUN_MIRROR_URL, or mirror_url in {loaded.config_path})")
    return usable_target(mirror_target(url, loaded.set_in.get("mirror_url", "mirror_url")))


@mirror_app.command("status")
@command
def mirror_status() -> None:
    """The mirror, whether it answers, sessions waiting, last push: exit 0 caught up, 1 behind or failing."""
    loaded, paths = load()
    target = _target(loaded)
    from postrun.mirror.commands import mirror_status as status_of  # psycopg: once it is known to be there
    from postrun.mirror.reconcile import describe_drift

    status = status_of(target, paths.db, redact=loaded.settings.mirror_redact)
    typer.echo(f"mirror: {status.target.label} ({status.shown_url})")
    typer.echo(f"server: {status.reach.state}: {status.reach.detail}")
    typer.echo(f"redaction: {redaction_text(status.redact)}")
    since = f" (waiting since {status.waiting_since})" if status.waiting_since else ""
    typer.echo(f"waiting: {plural(status.waiting, 'session')}{since}")
    if status.drift is not None and status.drift.sessions:
        typer.echo(f"differs: {describe_drift(status.drift)} (restored or recreated?); the next push sends them")
    if status.drift is not None and status.drift.mirror_only:
        typer.echo(f"mirror only: {plural(status.drift.mirror_only, 'session')} this store does not hold")
    typer.echo(f"last push: {status.last_push or 'never'}")
    if status.machine_id is not None:
        typer.echo(f"machine id: {status.machine_id}")
    if status.too_new:
        raise typer.Exit(int(ExitCode.CONFIG))
    raise typer.Exit(int(ExitCode.OK) if status.caught_up else int(ExitCode.FAILURE))


def redaction_text(redact: bool) -> str:
    if redact:
        return "on (secrets masked as a redacted export masks them)"
    return "off (mirror_redact = false: records are sent as stored, secrets in clear)"


@mirror_app.command("push")
@command
def mirror_push(
    everything: Annotated[
        bool,
        typer.Option("--all", help="Delete every stored session from the mirror and send it again whole."),
    ] = False,
) -> None:
    """Push what is waiting once, then exit (machines that do not run capture: CI runners, cron)."""
    from postrun.capture.log import configure_logging

    loaded, paths = load()
    target = _target(loaded)
    from postrun.mirror.commands import push_once
    from postrun.mirror.reconcile import describe_drift

    # psycopg's own warnings (a connection lost mid-batch) go to this log, not bare to stderr.
    log = configure_logging("WARNING", environ=os.environ)
    progress = log.progress
    try:
        report = push_once(
            target,
            paths.db,
            paths.mirror_lock,
            redact=loaded.settings.mirror_redact,
            everything=everything,
            on_start=(lambda total: progress.start(total, "pushing")) if progress is not None else lambda total: None,
            on_batch=(lambda pushed: progress.advance(pushed.sessions + len(pushed.refused)))
            if progress is not None
            else lambda pushed: None,
        )
    finally:
        log.close()
    if report.drift is not None:
        say(f"note: {describe_drift(report.drift)} (restored or recreated?): sent again")
    pushed = report.pushed
    for refused in pushed.refused:
        say(f"error: mirror {report.target.label}: session {refused.session_id}: {refused.reason} (kept queued)")
    typer.echo(
        f"mirror {report.target.label}: pushed {plural(pushed.sessions, 'session')} ({plural(pushed.steps, 'step')})"
        f" in {report.seconds:.1f} s; {plural(report.waiting, 'session')} waiting"
    )
    if report.waiting > len(pushed.refused):
        say("hint: sessions changed while pushing; run it again or let capture push them")
    if report.waiting:
        raise typer.Exit(int(ExitCode.FAILURE))
