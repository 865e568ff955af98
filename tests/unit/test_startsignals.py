"""Which command the start-up signal handling takes ``argv`` to name (``postrun.startsignals``)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from postrun.startsignals import command_of


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["capture"], "capture"),
        (["--db", "capture", "serve"], "serve"),  # an option's value is not the command
        (["--config=c.toml", "-v", "capture", "--once"], "capture"),
        (["--verbose", "--config", "c.toml", "sessions"], "sessions"),
        (["--version"], None),
        ([], None),
    ],
)
def test_the_command_is_the_first_argument_after_the_global_options(argv: list[str], command: str | None) -> None:
    assert command_of(argv) == command


_AFTER_THE_COMMAND = """
import os, signal, sys, time
from postrun import startsignals
from postrun.capture.signals import Signals
startsignals.hold(["capture"])
signals = Signals()
signals.install()
signals.restore()  # on its way out: the handlers it found are back
if sys.argv[1] == "INT":
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(3)
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(130)
else:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(3)
print("ran on")
"""


@pytest.mark.parametrize(("name", "code", "said"), [("INT", 130, "interrupted"), ("TERM", -signal.SIGTERM, "")])
def test_a_stop_signal_after_the_command_restored_its_handlers_is_not_swallowed(
    name: str, code: int, said: str
) -> None:
    # README: Ctrl-C and SIGTERM stop capture and serve. Once the command restored the handlers
    # it found (the start-up ones), a signal while the process ends (a blocked write of the
    # summary, an exit that waits) has its default effect, as before startsignals, not noted for no one.
    done = subprocess.run([sys.executable, "-c", _AFTER_THE_COMMAND, name], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (code, said), done.stderr
