"""Signals that arrive while ``postrun`` starts, before the command could handle them itself.

The interpreter starts with SIGTERM's default action (the process ends: 143) and Ctrl-C as a
KeyboardInterrupt raised wherever the main thread is, which typer turns into a silent exit 130
while it parses the arguments. README: ``capture`` and ``serve`` stop cleanly on Ctrl-C or
SIGTERM (exit 0; ``capture --once``: its summary and 130), any other command says
``interrupted`` and exits 130 on Ctrl-C. ``hold`` keeps those promises from the first line of
``main``:

- ``capture`` and ``serve``: SIGINT and SIGTERM are only noted, and their own handlers, once
  installed, ``take`` what was noted and stop as they would later. A KeyboardInterrupt raised in
  the middle of their start (a thread started, a lock taken, a C callback) could leave a thread
  running or the signal swallowed: the capture then hung at exit or ran on.
- the others: Ctrl-C raises KeyboardInterrupt as before, noted so ``main`` can say
  ``interrupted`` when typer did not let the command say it.

Only ``signal`` is imported here: this runs before anything else.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from types import FrameType
from typing import ClassVar

# The commands that install their own stop handling (postrun.capture.signals, the review app's server).
STOPPING_COMMANDS = frozenset({"capture", "serve"})
_GLOBAL_WITH_VALUE = frozenset({"--config", "--db"})
_NOTED = (signal.SIGINT, signal.SIGTERM)


class _State:
    noted: ClassVar[list[int]] = []
    holding = False  # the noting handlers are installed and the command has not taken over yet
    unreported_interrupt = False  # a Ctrl-C raised KeyboardInterrupt and no line said so yet


def hold(argv: Sequence[str]) -> None:
    """Install the start-up handlers for the command ``argv`` (the program's arguments) names."""
    if command_of(argv) in STOPPING_COMMANDS:
        _State.holding = True
        for number in _NOTED:
            signal.signal(number, _note)
    else:
        signal.signal(signal.SIGINT, _interrupted)


def take() -> list[int]:
    """The stop signals noted since ``hold``, once: for the command's own handlers, just installed.
    The start is over: a signal that reaches ``_note`` from now on (the command restored the
    handlers it found, on its way out) has its default effect, not swallowed."""
    _State.holding = False
    noted, _State.noted = _State.noted, []
    return noted


def release() -> None:
    """Back to the default handling (a command that installs none of its own after all, such as
    ``capture --daemon``'s caller), with what was noted delivered now."""
    if not _State.holding:
        return
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for number in take():
        os.kill(os.getpid(), number)


def interrupt_reported() -> None:
    """The ``interrupted`` line was written: nothing is left to say at exit."""
    _State.unreported_interrupt = False


def interrupt_unreported() -> bool:
    return _State.unreported_interrupt


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names after the global options (None: none, or an option this does
    not know). A guess before typer parses them: a wrong one only leaves the signals' defaults."""
    arguments = iter(argv)
    for argument in arguments:
        if argument in _GLOBAL_WITH_VALUE:
            next(arguments, None)
        elif argument in ("-v", "--verbose") or argument.startswith(("--config=", "--db=")):
            continue
        elif argument.startswith("-"):
            return None
        else:
            return argument
    return None


def _note(number: int, frame: FrameType | None) -> None:
    if _State.holding:
        _State.noted.append(number)
    elif number == signal.SIGINT:
        signal.default_int_handler(number, frame)
    else:
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)


def _interrupted(_number: int, _frame: FrameType | None) -> None:
    _State.unreported_interrupt = True
    raise KeyboardInterrupt
