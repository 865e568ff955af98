"""Printing session data safely, and Postrun's one timestamp form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from postrun.agents.cline.times import valid_timestamp
from postrun.text import one_line, plural, printable, revealed
from postrun.timestamps import iso_from_ms, normalize_timestamp, utc_iso


def test_printable_escapes_terminal_control_characters() -> None:
    hostile = "title\x1b]0;pwned\x07\x00end\x9b"
    assert printable(hostile) == "title\\x1b]0;pwned\\x07\\x00end\\x9b"
    assert printable("naïve café ✓") == "naïve café ✓"  # only control characters are escaped


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("git\u200cstatus", "git\\u200cstatus"),  # a joiner inside a command hides
        ("rm\u200d -rf", "rm\\u200d -rf"),
        ("\u200dx", "\\u200dx"),
        ("a\u200bb\ufeff", "a\\u200bb\\ufeff"),  # a zero-width space and the BOM, anywhere
        ("tag\U000e0041", "tag\\U000e0041"),
        # Scotland's flag: the black flag, "gbsct" in tags, the cancel tag; tags beside nothing are shown
        (
            "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
            "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
        ),
        (
            "\U0001f3f4\U000e0072\U000e006d\U000e0020\U000e007f",
            "\U0001f3f4\\U000e0072\\U000e006d\\U000e0020\\U000e007f",
        ),
        ("\U0001f468\u200d\U0001f4bb", "\U0001f468\u200d\U0001f4bb"),  # one emoji of several joined
        (
            "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
            "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        ),  # Persian
    ],
)
def test_revealed_shows_what_displays_as_nothing_but_joiners_that_shape_text(text: str, shown: str) -> None:
    assert revealed(text) == shown


def test_one_line_folds_whitespace_and_cuts() -> None:
    assert one_line("  fix\n\tthe   tests \r\n") == "fix the tests"
    assert one_line("a" * 10, 5) == "aaaa…"
    assert one_line("abc", 3) == "abc"
    assert one_line("x\x1by") == "x\\x1by"


def test_plural() -> None:
    assert (plural(0, "step"), plural(1, "step"), plural(1234, "turn")) == ("0 steps", "1 step", "1,234 turns")


def test_utc_iso_writes_milliseconds_and_z() -> None:
    moment = datetime(2026, 11, 29, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert utc_iso(moment) == "2026-11-29T12:00:00.123Z"
    assert utc_iso(moment, timespec="seconds") == "2026-11-29T12:00:00Z"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-01-01T00:00:00+02:00", "2025-12-31T22:00:00.000Z"),
        ("2026-09-21T14:13:19.5Z", "2026-09-21T14:13:19.500Z"),
        ("2026-09-21T14:13:19.500Z", "2026-09-21T14:13:19.500Z"),
    ],
)
def test_normalize_timestamp(value: str, expected: str) -> None:
    assert normalize_timestamp(value) == expected


def test_a_date_alone_is_local_midnight() -> None:
    local_midnight = datetime(2026, 11, 29).astimezone()
    assert normalize_timestamp("2026-11-29") == utc_iso(local_midnight.astimezone(UTC))
    with pytest.raises(ValueError):
        normalize_timestamp("yesterday")


@pytest.mark.parametrize("value", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_a_time_outside_years_1_to_9999_in_utc_is_invalid(value: str) -> None:
    with pytest.raises(ValueError, match="outside the years 1 to 9999"):
        normalize_timestamp(value)
    assert valid_timestamp(value) is None  # a manifest field with it is ignored like any invalid time
    assert valid_timestamp(value.replace("00:30:00", "01:30:00").replace("23:30:00", "22:30:00")) is not None


@given(st.integers(-62_135_596_800_000, 253_402_300_799_999))
def test_a_time_in_milliseconds_is_the_calendar_s(ms: int) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    day = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    clock = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}"
    assert iso_from_ms(ms) == f"{day}T{clock}Z"
