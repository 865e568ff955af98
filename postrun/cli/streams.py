"""Standard streams a command was started without: given /dev/null before anything else runs."""

from __future__ import annotations

import os
import sys

_STREAMS = (
    (0, "stdin", "r", "surrogateescape"),
    (1, "stdout", "w", "surrogateescape"),
    (2, "stderr", "w", "backslashreplace"),
)


def fill_closed_streams() -> None:
    """Open /dev/null as each of stdin, stdout and stderr that was closed when the command
    started (``postrun mcp <&-``, ``postrun export ID >&-``): a closed stdin reads as empty, what
    goes to a closed stdout or stderr goes nowhere, as with ``</dev/null`` and ``>/dev/null``,
    and no file Postrun opens later gets descriptor 0, 1 or 2 (what a child would write into)."""
    for descriptor, name, mode, errors in _STREAMS:
        if getattr(sys, name) is not None:  # Python leaves a stream None when its descriptor was closed
            continue
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        if null != descriptor:
            os.dup2(null, descriptor)  # inheritable, as a standard stream is
            os.close(null)
        else:
            os.set_inheritable(null, True)
        setattr(sys, name, open(descriptor, mode, encoding="utf-8", errors=errors, closefd=False))  # noqa: SIM115 - the process's own stream
