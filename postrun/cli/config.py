"""``postrun config show|path``."""

from __future__ import annotations

import os

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, state

config_app = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
@command
def config_show() -> None:
    """Every effective setting and where it came from."""
    from postrun.agents.registry import folder_lines
    from postrun.settings import describe

    loaded, _ = load()
    for value in describe(loaded):
        typer.echo(f"{value.key} = {value.value}  ({value.source})")
    for line in folder_lines(loaded, os.environ):
        typer.echo(f"# {line}")


@config_app.command("path")
@command
def config_path() -> None:
    """The configuration file Postrun reads (it may not exist). Works even when the file is broken."""
    from postrun.paths import config_file_location, working_dir

    path, _ = config_file_location(state.config, os.environ, base=working_dir())
    typer.echo(str(path))
