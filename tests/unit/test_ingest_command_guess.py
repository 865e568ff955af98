"""``postrun ingest`` read off its arguments before typer parses them (``ahead.ingest_command``): the
guess that starts its ingest processes as the interpreter starts, plainly that command or none."""

from __future__ import annotations

import pytest

from postrun.ingest.ahead import ingest_command


@pytest.mark.parametrize(
    ("argv", "guessed"),
    [
        (["ingest", "a", "b"], (("a", "b"), None)),
        (["ingest", "--agent", "codex", "a"], (("a",), "codex")),
        (["ingest", "a", "--agent=claude-code", "b"], (("a", "b"), "claude-code")),
        (["ingest", "--force", "a"], (("a",), None)),
        (["ingest", "a", "--", "--agent", "-b"], (("a", "--agent", "-b"), None)),
        (["ingest"], ((), None)),
    ],
)
def test_the_targets_and_agent_of_an_ingest_are_read_off_its_arguments(
    argv: list[str], guessed: tuple[tuple[str, ...], str | None]
) -> None:
    assert ingest_command(argv) == guessed


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["capture", "a"],
        ["--version"],
        ["ingest", "--help"],
        ["ingest", "a", "-h"],
        ["ingest", "--agent"],  # its value missing: typer's to report
        ["ingest", "--forced", "a"],  # an option this guess does not know
    ],
)
def test_anything_but_plainly_an_ingest_is_no_guess(argv: list[str]) -> None:
    assert ingest_command(argv) is None


def test_what_an_early_guess_assumes_of_the_settings_is_their_defaults() -> None:
    """``postrun.ingest.early`` reads no settings: its rules and the settings it looks for by name
    must stay the settings' own."""
    from postrun.ingest.early import GUESSED_RULES, READING_SETTINGS
    from postrun.settings import Settings, env_variable

    fields = Settings.model_fields
    assert fields["max_file_mb"].default * 2**20 == GUESSED_RULES.max_bytes
    assert fields["keep_raw"].default is GUESSED_RULES.keep_raw
    assert not fields["exclude"].get_default(call_default_factory=True) and GUESSED_RULES.exclusions is None
    for key in READING_SETTINGS:
        assert key in fields and env_variable(key) == "POSTRUN_" + key.upper()
