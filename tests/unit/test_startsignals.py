"""Which command the start-up signal handling takes ``argv`` to name (``postrun.startsignals``)."""

from __future__ import annotations

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
