"""The exit codes of every `postrun` command, in one place."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1  # a command failed, or `doctor` found a failing check
    USAGE = 2  # bad arguments
    NOT_RUNNING = 3  # `status`: no capture is running
    ALREADY_RUNNING = 75  # another capture holds this store (EX_TEMPFAIL)
    # `forget`: the sessions are gone from the store's tables, but a reader kept the scrub of the
    # store's files from finishing (EX_TEMPFAIL: a running capture finishes it; or run it again).
    SCRUB_PENDING = 75
    # A configuration error, a store a newer Postrun wrote, or one an older Postrun wrote that
    # only reading commands met (a writer upgrades it) (EX_CONFIG).
    CONFIG = 78
    INTERRUPTED = 130  # Ctrl-C (SIGINT) stopped it before it was done (128 + SIGINT, as shells say)
    BROKEN_PIPE = 141  # stdout's reader left (`| head`): what a tool that SIGPIPE ends exits with
