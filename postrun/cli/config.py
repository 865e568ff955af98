"""``postrun config show|path``."""

from __future__ import annotations

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load
from postrun.settings import describe

config_app = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
@command
def config_show() -> None:
    """Every effective setting and where it came from."""
    loaded, _ = load()
    for value in describe(loaded):
        typer.echo(f"{value.key} = {value.value}  ({value.source})")


@config_app.command("path")
@command
def config_path() -> None:
    """The configuration file Postrun reads (it may not exist)."""
    loaded, _ = load()
    typer.echo(str(loaded.config_path))
