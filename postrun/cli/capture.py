"""``postrun capture`` (record sessions as they change) and ``postrun status``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, path_text, say, state
from postrun.errors import UsageError
from postrun.exitcodes import ExitCode
from postrun.startsignals import release
from postrun.text import plural

if TYPE_CHECKING:
    from postrun.settings import LoadedSettings


@app.command()
@command
def capture(
    once: Annotated[bool, typer.Option("--once", help="Ingest what is new or changed, print a summary, exit.")] = False,
    daemon: Annotated[
        bool, typer.Option("--daemon", help="Detach and log to the capture log (without a service manager).")
    ] = False,
    cline_dir: Annotated[
        Path | None,
        typer.Option(
            "--cline-dir", parser=path_text, metavar="PATH", help="Cline's sessions folder (POSTRUN_CLINE_DIR)."
        ),
    ] = None,
    debounce_seconds: Annotated[
        float | None, typer.Option("--debounce-seconds", help="Pause after a session's last change (default 2).")
    ] = None,
    poll_seconds: Annotated[
        float | None, typer.Option("--poll-seconds", help="Fallback poll interval (default 3).")
    ] = None,
    no_events: Annotated[
        bool, typer.Option("--no-events", help="Poll only (network file systems, where events do not arrive).")
    ] = False,
    log_level: Annotated[str | None, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")] = None,
) -> None:
    """Record every session of every agent it watches (the agents setting) as it changes; runs
    in the foreground until stopped (SIGTERM, Ctrl-C)."""
    from postrun.capture.daemon import refuse_under_supervisor, refuse_when_running, start_daemon
    from postrun.capture.entry import capture_once, capture_until_stopped
    from postrun.paths import CONFIG_VARIABLE, env_value
    from postrun.settings import load_settings

    if once and daemon:
        raise UsageError("--daemon", "cannot be combined with --once")
    overrides: dict[str, Any] = {
        "cline_dir": cline_dir,
        "debounce_seconds": debounce_seconds,
        "poll_seconds": poll_seconds,
        "use_events": False if no_events else None,
        "log_level": log_level,
    }
    if daemon:
        # This process only waits for the background one: Ctrl-C and SIGTERM as for any command.
        release()
        refuse_under_supervisor(os.environ)
    loaded, paths = load(**overrides)

    # A file named by --config or POSTRUN_CONFIG is pinned by its absolute path (a relative one
    # keeps its meaning) and still named by what named it. The default location is looked up
    # again, so a default file created or removed since start is read as at a start: an absent
    # one means the defaults (README: SIGHUP re-reads the configuration).
    config_file = loaded.config_path if state.config is not None else None
    environ: Mapping[str, str] = os.environ
    if config_file is None and env_value(os.environ, CONFIG_VARIABLE) is not None:
        environ = {**os.environ, CONFIG_VARIABLE: str(loaded.config_path)}

    def reload() -> LoadedSettings:
        return load_settings(config_file=config_file, overrides={"db": state.db, **overrides}, environ=environ)

    if daemon:
        refuse_when_running(paths.capture_lock)
        pid = start_daemon(
            lambda on_ready: capture_until_stopped(
                loaded, paths, os.environ, reload=reload, on_ready=on_ready, daemon=True
            ),
            log_hint=str(paths.capture_log),
        )
        typer.echo(f"postrun capture: running in the background (pid {pid}); log: {paths.capture_log}")
        return
    if once:
        summary = capture_once(loaded, paths, os.environ)
        typer.echo(summary.line())
        if summary.ctrl_c:
            raise typer.Exit(int(ExitCode.INTERRUPTED))
        raise typer.Exit(int(ExitCode.FAILURE) if summary.failed else int(ExitCode.OK))
    raise typer.Exit(
        capture_until_stopped(loaded, paths, os.environ, reload=reload, on_ready=lambda pid: None, daemon=False)
    )


@app.command()
@command
def status() -> None:
    """Whether capture is running (exit 0) or not (exit 3), and what the store holds."""
    from postrun.agents.registry import folder_lines
    from postrun.capture.status import capture_status
    from postrun.web.state import review_app_status

    loaded, paths = load()
    found = capture_status(paths.db, paths.capture_lock)
    info = found.capture
    if info is None:
        typer.echo("capture: not running")
    else:
        typer.echo(f"capture: running ({info.pid_text}, since {info.started_at})")
    typer.echo(f"review app: {review_app_status(paths.web_state)}")
    if found.store_error is not None:
        raise found.store_error  # its one-line error and exit code, after what is known
    if found.stored is None:
        typer.echo(f"store: {paths.db} (not created yet)")
    else:
        stored = found.stored
        sessions = plural(stored.sessions, "session", grouped=False)
        typer.echo(f"store: {paths.db} ({sessions}, {plural(stored.steps, 'step', grouped=False)})")
    for line in folder_lines(loaded, os.environ):
        typer.echo(line)
    if info is None:
        say("hint: start it with `postrun capture` (or `postrun capture --daemon`)")
        raise typer.Exit(int(ExitCode.NOT_RUNNING))
    if info.last_ingest is not None:
        typer.echo(f"last ingest: {info.last_ingest}")
    elif found.stored is not None and found.stored.last_update is not None:
        typer.echo(f"last ingest: none since it started; the store last changed {found.stored.last_update}")
    else:
        typer.echo("last ingest: none yet")
    typer.echo(f"sessions watched: {info.sessions_watched}")
    if info.reflag is not None:
        typer.echo(f"re-flagging: {info.reflag} stored sessions (the flag rules changed)")
