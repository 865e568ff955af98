"""``postrun capture`` (record sessions as they change) and ``postrun status``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, open_store, say, state
from postrun.errors import UsageError
from postrun.exitcodes import ExitCode
from postrun.paths import Paths
from postrun.settings import LoadedSettings, load_settings


@app.command()
@command
def capture(
    once: Annotated[bool, typer.Option("--once", help="Ingest what is new or changed, print a summary, exit.")] = False,
    daemon: Annotated[
        bool, typer.Option("--daemon", help="Detach and log to the capture log (without a service manager).")
    ] = False,
    cline_dir: Annotated[
        Path | None, typer.Option("--cline-dir", help="Cline's sessions folder (POSTRUN_CLINE_DIR).")
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
    """Record every Cline session as it changes; runs until stopped (SIGTERM, Ctrl-C)."""
    from postrun.capture.daemon import refuse_under_supervisor, start_daemon

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
        refuse_under_supervisor(os.environ)
    loaded, paths = load(**overrides)

    # The file found at start, by its absolute path; the default location is looked up again
    # (a config file created after start is then picked up).
    config_file = loaded.config_path if loaded.config_found else state.config

    def reload() -> LoadedSettings:
        return load_settings(config_file=config_file, overrides={"db": state.db, **overrides}, environ=os.environ)

    if daemon:
        pid = start_daemon(
            lambda report_ready: _serve(loaded, paths, reload, report_ready, daemon=True),
            log_hint=str(paths.capture_log),
        )
        typer.echo(f"postrun capture: running in the background (pid {pid}); log: {paths.capture_log}")
        return
    if once:
        raise typer.Exit(_once(loaded, paths))
    raise typer.Exit(_serve(loaded, paths, reload, lambda pid: None, daemon=False))


def _once(loaded: LoadedSettings, paths: Paths) -> int:
    from postrun.capture.log import configure_logging
    from postrun.capture.service import CaptureContext, Signals, run_once

    log = configure_logging(loaded.settings.log_level, environ=os.environ)
    signals = Signals()
    signals.install()
    try:
        context = CaptureContext(
            loaded=loaded, paths=paths, environ=os.environ, logger=log.logger, progress=log.progress
        )
        summary = run_once(context, signals)
    finally:
        signals.restore()
        log.close()
    typer.echo(summary.line())
    return int(ExitCode.FAILURE) if summary.failed else int(ExitCode.OK)


def _serve(loaded: LoadedSettings, paths: Paths, reload: Any, report_ready: Any, *, daemon: bool) -> int:
    """Capture until stopped; under --daemon this runs in the detached process."""
    from postrun.capture.log import configure_logging
    from postrun.capture.service import CaptureContext, Signals, run_capture
    from postrun.errors import PostrunError

    try:
        log = configure_logging(
            loaded.settings.log_level, environ=os.environ, log_file=paths.capture_log if daemon else None
        )
    except OSError as exc:
        raise PostrunError(str(paths.capture_log), f"cannot open the capture log ({exc.strerror or exc})") from None
    signals = Signals()
    signals.install()
    context = CaptureContext(
        loaded=loaded,
        paths=paths,
        environ=os.environ,
        logger=log.logger,
        progress=log.progress,
        reload=reload,
        on_ready=report_ready,
        set_log_level=log.set_level,
    )
    try:
        return run_capture(context, signals)
    except PostrunError as exc:
        if daemon:  # its stderr is /dev/null: the log is the only place to say it
            log.logger.error(f"capture: {exc}")
        raise
    except Exception as exc:
        if daemon:
            log.logger.error(f"capture: internal error: {type(exc).__name__}: {exc}", exc_info=True)
        raise
    finally:
        signals.restore()
        log.close()


@app.command()
@command
def status() -> None:
    """Whether capture is running (exit 0) or not (exit 3), and what the store holds."""
    from postrun.capture.lock import read_capture_info
    from postrun.store.db import StoreMissing
    from postrun.store.query import counts

    _, paths = load()
    info = read_capture_info(paths.capture_lock)
    if info is None:
        typer.echo("capture: not running")
    else:
        pid = f"pid {info.pid}" if info.pid else "pid unknown"
        typer.echo(f"capture: running ({pid}, since {info.started_at})")
    try:
        with open_store(paths, create=False) as database:
            stored = counts(database)
        typer.echo(f"store: {paths.db} ({stored.sessions} sessions, {stored.steps} steps)")
    except StoreMissing:
        typer.echo(f"store: {paths.db} (not created yet)")
    if info is not None:
        typer.echo(f"last ingest: {info.last_ingest or 'none yet'}")
        typer.echo(f"sessions watched: {info.sessions_watched}")
    if info is None:
        say("hint: start it with `postrun capture` (or `postrun capture --daemon`)")
        raise typer.Exit(int(ExitCode.NOT_RUNNING))
