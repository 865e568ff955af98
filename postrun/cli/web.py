"""The review app's commands: ``serve`` (run it) and ``open`` (sign a browser in)."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, say
from postrun.errors import PostrunError
from postrun.web.address import DEFAULT_HOST, DEFAULT_PORT


@app.command()
@command
def serve(
    port: Annotated[
        int, typer.Option("--port", "-p", min=0, max=65535, help="Port (0: any free port).")
    ] = DEFAULT_PORT,
    host: Annotated[
        str, typer.Option("--host", help="Loopback address to bind: 127.0.0.1, any other 127.x.y.z, or ::1.")
    ] = DEFAULT_HOST,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Also open the browser, signed in (default: --no-open).")
    ] = False,
) -> None:
    """Run the review app, a local web page over the store, until SIGTERM or Ctrl-C.

    It listens on loopback only; every page needs the one-time login link `postrun open` makes.
    """
    import webbrowser

    from postrun.web.launch import write_redirect
    from postrun.web.server import Listening
    from postrun.web.server import serve as run

    _, paths = load()

    def listening(where: Listening) -> None:
        typer.echo(f"postrun serve: {where.url} (open with: postrun open)")
        if open_browser:
            try:  # the link stays off the browser's command line, as in `open`
                page = write_redirect(paths.web_state.parent, where.state.login_url(time.time()))
            except PostrunError as exc:
                say(f"warning: {exc}; open with: postrun open --print")
                return
            webbrowser.open(page.as_uri())

    run(paths.db, paths.web_state, host=host, port=port, on_listening=listening, home=paths.home)


@app.command("open")
@command
def open_command(
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the login link instead of opening a browser (valid once, 60 s).")
    ] = False,
) -> None:
    """Open the running review app in the browser, signed in by a one-time link."""
    import webbrowser

    from postrun.web.launch import write_redirect
    from postrun.web.state import read_state

    _, paths = load()
    state = read_state(paths.web_state)
    url = state.login_url(time.time())
    if print_only:
        typer.echo(url)
        return
    # The browser gets a private local page that sends it on: a link on its command line would
    # be readable by any local user (`ps`) and sign them in.
    try:
        page = write_redirect(paths.web_state.parent, url)
    except PostrunError as exc:
        say(f"warning: {exc}; open this link (valid once, for 60 s):")
        typer.echo(url)
        return
    if not webbrowser.open(page.as_uri()):
        page.unlink(missing_ok=True)
        say("no browser found; open this link (valid once, for 60 s):")
        typer.echo(url)
        return
    # A browser that may not read the state folder (a snap's, a flatpak's) shows an error page,
    # and opening it still succeeded: the way out is said.
    say(f"opened {state.url} in your browser (if it shows an error: postrun open --print)")
