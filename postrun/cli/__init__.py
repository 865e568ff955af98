"""The ``postrun`` command line: a thin shell over the library.

Each command loads the settings, calls one library function and prints its
result. Expected failures (``PostrunError``) become one line on stderr,
``error: <where>: <reason>``, and the error's exit code (see ``ExitCode``).
Command modules attach their commands to ``postrun.cli.app.app`` when imported.
"""

from __future__ import annotations

import gc
import os
import sys

from postrun import startsignals


def main() -> None:
    # First: a signal of the moments before the command installs its own handling.
    startsignals.hold(sys.argv[1:])
    try:
        _main()
    except KeyboardInterrupt:
        # Ctrl-C while the command line is still being imported, before a command could say it:
        # one line and 130, as an interrupted command ends (ExitCode.INTERRUPTED), no traceback.
        _say_interrupted()
        sys.exit(130)
    except SystemExit as exc:
        # typer makes a Ctrl-C while it parses the arguments a silent 130: the line is said here.
        if exc.code == 130 and startsignals.interrupt_unreported():
            _say_interrupted()
        raise


def _say_interrupted() -> None:
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()


def _main() -> None:
    from postrun.cli.streams import fill_closed_streams

    fill_closed_streams()  # first: the ingest processes started next inherit them
    from postrun.ingest import ahead

    # Before typer and the library are imported (most of the quarter of a second `postrun ingest`
    # takes to give out its first session): its ingest processes start up, and prepare its first
    # sessions, meanwhile.
    ahead.start_early(sys.argv[1:], os.environ)
    try:
        from postrun.cli import capture, config, mirror, otel, recall, review, service, sessions, vault, web  # noqa: F401 - importing registers the commands
        from postrun.cli.app import app
        from postrun.cli.common import run_app

        run_app(app)
    finally:
        ahead.end_early()
        # The interpreter's teardown collects garbage, each pass walking every object still alive:
        # 60-90 ms after a batched ingest of 40 large sessions, ~20 ms with them frozen out of it.
        # Commands close what they open (``with``, ``closing``): only cyclic garbage goes
        # uncollected, and nothing of it needs finalizing as the process ends.
        gc.freeze()
