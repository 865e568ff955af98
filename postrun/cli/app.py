"""The typer application and its global options; command modules attach to ``app``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from postrun import __version__
from postrun.cli.common import path_text, state

app = typer.Typer(
    name="postrun",
    help="Record what AI coding agents do into a local SQLite store.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain help, readable in a journal, a pipe or a terminal (usage errors are one line: ``run_app``).
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"postrun {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            parser=path_text,
            metavar="PATH",
            help="Configuration file (default: POSTRUN_CONFIG, then the user config dir).",
        ),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option("--db", parser=path_text, metavar="PATH", help="The store's SQLite file (POSTRUN_DB)."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks of internal errors.")] = False,
) -> None:
    state.config = config
    state.db = db
    state.verbose = verbose
