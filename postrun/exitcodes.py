"""The exit codes of every `postrun` command, in one place."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1  # a command failed, or `doctor` found a failing check
    USAGE = 2  # bad arguments
    NOT_RUNNING = 3  # `status`: no capture is running
    ALREADY_RUNNING = 75  # another capture holds this store (EX_TEMPFAIL)
    CONFIG = 78  # configuration error, or a store written by a newer Postrun (EX_CONFIG)
    BROKEN_PIPE = 141  # stdout's reader left (`| head`): what a tool that SIGPIPE ends exits with
