"""A real terminal (a pty) for a command: what it shows there, read until the command let go of it."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Callable


def on_a_terminal(
    run: Callable[[int], subprocess.CompletedProcess[bytes]], typed: bytes = b""
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """``run(terminal)`` (it gives the terminal's descriptor to the command's streams), with
    ``typed`` waiting at the terminal for the command to read; what finished and what the
    terminal showed."""
    main, secondary = pty.openpty()
    try:
        os.write(main, typed)  # typed ahead: the terminal holds it for the command
        finished = run(secondary)
        os.close(secondary)
        secondary = -1
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal's other end closed: all of it was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if secondary >= 0:
            os.close(secondary)
        os.close(main)
    return finished, shown
