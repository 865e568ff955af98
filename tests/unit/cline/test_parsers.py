"""The small text parsers: command results, patches, user_input wrappers, segments, times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from postrun.agents.cline.commands import TRUNCATED_QUERY, CommandOutput, parse_command_result, query_matches
from postrun.agents.cline.patch import parse_patch, parse_search_replace
from postrun.agents.cline.segments import plan_segments
from postrun.agents.cline.text import is_synthetic, prompt_text, unwrap
from postrun.agents.cline.times import valid_timestamp
from postrun.timestamps import epoch_ms, iso_from_ms, iso_from_ns


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("out", CommandOutput("out")),
        ("", CommandOutput("")),
        ("[Command exited with code 1]", CommandOutput("", exit_code=1)),
        ("[Command exited with code 1]\n", CommandOutput("", exit_code=1)),
        ("[Command exited with code -9]\nkilled", CommandOutput("killed", exit_code=-9)),
        ("out\n[Command exited with code 4]\n", CommandOutput("out", exit_code=4)),
        ("a\n[Command exited with code 4]\nb", CommandOutput("a\n[Command exited with code 4]\nb")),
        ("a\n[Command exited with code 4]\n\n", CommandOutput("a\n[Command exited with code 4]\n\n")),
        ("a[Command exited with code 4]", CommandOutput("a[Command exited with code 4]")),
        ("a\n\n[Command exited with code 4]", CommandOutput("a\n", exit_code=4)),
        ("a\n[Command exited with code 4]x", CommandOutput("a\n[Command exited with code 4]x")),
        ("a\n[stderr]\nb\n[stderr]\nc", CommandOutput("a", "b\n[stderr]\nc")),
        ("[stderr]\nnot a marker without its newline", CommandOutput("[stderr]\nnot a marker without its newline")),
    ],
)
def test_command_result_text(text: str, expected: CommandOutput) -> None:
    assert parse_command_result(text) == expected


def test_an_exit_code_longer_than_any_status_is_text() -> None:
    text = "out\n[Command exited with code " + "9" * 30 + "]"
    assert parse_command_result(text) == CommandOutput(text)
    assert parse_command_result("out\n[Command exited with code -2147483648]").exit_code == -2147483648


def test_a_marker_contradicting_success_is_output() -> None:
    # Cline marks success only for exit 0: another code in a successful item's text is what
    # the command printed (e.g. the end of a detached command's log it read back).
    log = "listening\n[Command exited with code 143]\n"
    assert parse_command_result(log, succeeded=True) == CommandOutput(log)
    first = "[Command exited with code 2]\nold log"
    assert parse_command_result(first, succeeded=True) == CommandOutput(first)
    assert parse_command_result(log, succeeded=False) == CommandOutput("listening", exit_code=143)
    assert parse_command_result("out\n[Command exited with code 0]", succeeded=True) == CommandOutput(
        "out", exit_code=0
    )


def test_a_cut_query_with_an_absurd_length_falls_back_to_its_head() -> None:
    query = "npm" + TRUNCATED_QUERY + " " + "9" * 5000 + " more chars]"  # beyond int()'s 4300 digits
    assert query_matches(query, "npm test")  # no length to check: the head decides
    assert not query_matches(query, "make")
    assert query_matches("npm" + TRUNCATED_QUERY + " 5 more chars]", "npm test")
    assert not query_matches("npm" + TRUNCATED_QUERY + " 6 more chars]", "npm test")


def test_detached_command_output_so_far_keeps_its_stderr() -> None:
    text = "[Command is still running. Output will continue in /tmp/x/output.log]\nup\n[stderr]\nwarn"
    assert parse_command_result(text) == CommandOutput("up", "warn", output_ref="/tmp/x/output.log")


def test_proceed_wording_without_a_log_path_is_plain_output() -> None:
    text = "The user chose to proceed while the command was starting, but said nothing else."
    assert parse_command_result(text) == CommandOutput(text)


def test_patch_sections() -> None:
    patch = "\n".join(
        [
            "noise before",
            "*** Begin Patch",
            "*** Update File: a.py",
            "*** Move to: b.py",
            "@@ class A:",
            " keep",
            "-old 1",
            "+new 1",
            "@@ def f():",
            "-old 2",
            "*** End of File",
            "*** Add File: empty.txt",
            "*** End Patch",
            "*** Add File: after-the-end.txt",
        ]
    )
    sections = parse_patch(patch)
    assert sections is not None
    assert [section.edit_payload() for section in sections] == [
        {"path": "a.py", "old_string": "old 1\nold 2\n", "new_string": "new 1\n", "is_full_write": False},
        {"path": "empty.txt", "new_string": "", "is_full_write": True},
    ]


@pytest.mark.parametrize("patch", ["", "*** Begin Patch\n*** End Patch", "+x\n-y", "*** Begin Patch\n+orphan line"])
def test_patch_without_sections(patch: str) -> None:
    assert parse_patch(patch) is None


def test_search_replace_blocks() -> None:
    assert parse_search_replace("<<<<<<< SEARCH\na\nb\n=======\nc\n>>>>>>> REPLACE") == ("a\nb", "c")
    assert parse_search_replace("------- SEARCH\na\n=======\n") == ("a", "")  # cut short: what is there
    assert parse_search_replace("just text") is None


@pytest.mark.parametrize(
    ("text", "inner", "mode", "prompt"),
    [
        ('<user_input mode="act">do it</user_input>', "do it", "act", "do it"),
        ('\n<user_input mode="plan" extra="1">\n x \n</user_input>\n', "\n x \n", "plan", "x"),
        ("<user_input>no mode</user_input>", "no mode", None, "no mode"),
        (
            '<user_input mode="act"><mode_notice>a</mode_notice>one<mode_notice>b\nc</mode_notice> two</user_input>',
            "<mode_notice>a</mode_notice>one<mode_notice>b\nc</mode_notice> two",
            "act",
            "one two",
        ),
        ('<user_input mode="act">unclosed', '<user_input mode="act">unclosed', None, '<user_input mode="act">unclosed'),
        ("  plain  ", "  plain  ", None, "plain"),
        ('prefix <user_input mode="act">x</user_input>', 'prefix <user_input mode="act">x</user_input>', None, None),
    ],
)
def test_user_input_wrapper(text: str, inner: str, mode: str | None, prompt: str | None) -> None:
    found = unwrap(text)
    assert (found.inner, found.mode) == (inner, mode)
    assert found.wrapped is (text != inner)
    if prompt is not None:
        assert prompt_text(found) == prompt


@pytest.mark.parametrize(
    ("metadata", "text", "synthetic"),
    [
        ({"kind": "recovery_notice"}, "hello", True),
        ({"displayRole": "status"}, "hello", True),
        ({"userRunSpan": 0}, "hello", True),
        ({"userRunSpan": False}, "hello", False),
        ({"userRunSpan": 2}, "[SYSTEM] typed", False),
        ({}, "[SYSTEM] typed", False),
        (None, "  [SYSTEM] reminder", True),
        ("not a dict", "hello", False),
        (None, "hello", False),
    ],
)
def test_synthetic_rules(metadata: Any, text: str, synthetic: bool) -> None:
    assert is_synthetic(metadata, text) is synthetic


def test_segments_ignore_bad_entries_and_keep_the_earliest_start() -> None:
    history = [
        {"runCount": 2, "createdAt": 1790000200000},
        {"runCount": 2, "createdAt": 1790000100000.7},
        {"runCount": 0, "createdAt": 1790000000000},
        {"runCount": True, "createdAt": 1790000000000},
        {"runCount": 3, "createdAt": "later"},
        {"runCount": 4},
        "junk",
    ]
    plan = plan_segments({"history": history}, started_at="S", ended_at=None, source_files=["/f"])
    assert plan.run_counts == (2,)
    assert plan.segments == ({"index": 0, "start_reason": "start", "started_at": "S", "source_files": ["/f"]},)
    assert [plan.segment_for_turn(turn) for turn in range(4)] == [0, 0, 0, 0]


def test_segments_without_checkpoints() -> None:
    for checkpoint in (None, {}, {"history": "x"}, []):
        plan = plan_segments(checkpoint, started_at="S", ended_at="E", source_files=[])
        assert plan.segments == (
            {"index": 0, "start_reason": "start", "started_at": "S", "ended_at": "E", "source_files": []},
        )


def test_turns_map_to_the_largest_run_count_not_above_them() -> None:
    history = [{"runCount": count, "createdAt": 1790000000000 + count} for count in (5, 2, 3)]
    plan = plan_segments({"history": history}, started_at="S", ended_at=None, source_files=[])
    assert plan.run_counts == (2, 3, 5)
    assert [plan.segment_for_turn(turn) for turn in range(8)] == [0, 0, 0, 1, 1, 2, 2, 2]
    assert [segment["start_reason"] for segment in plan.segments] == ["start", "resume", "resume"]
    assert "ended_at" not in plan.segments[-1]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1790000000000, "2026-09-21T14:13:20.000Z"),
        (1790000000123.9, "2026-09-21T14:13:20.123Z"),
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (253402300799999, "9999-12-31T23:59:59.999Z"),
        (-62135596800000, "0001-01-01T00:00:00.000Z"),
    ],
)
def test_epoch_milliseconds(value: float, expected: str) -> None:
    ms = epoch_ms(value)
    assert ms is not None
    assert iso_from_ms(ms) == expected
    assert valid_timestamp(expected) == expected


@given(st.integers(min_value=-62_135_596_800_000, max_value=253_402_300_799_999))
def test_epoch_milliseconds_read_as_the_calendar_does(ms: int) -> None:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    assert iso_from_ms(ms) == moment.isoformat(timespec="milliseconds").replace("+00:00", "Z").rjust(24, "0")


@pytest.mark.parametrize("value", [None, True, "1790000000000", float("nan"), float("inf"), 10**20, -(10**20), [1]])
def test_not_epoch_milliseconds(value: Any) -> None:
    assert epoch_ms(value) is None


def test_timestamps() -> None:
    assert iso_from_ns(1_790_000_000_123_456_789) == "2026-09-21T14:13:20.123Z"
    for good in ("2026-09-21T14:13:20Z", "2026-09-21T14:13:20.5+02:00"):
        assert valid_timestamp(good) == good
    for bad in ("2026-09-21 14:13", "2026-09-21T14:13:20", "2026-13-01T00:00:00Z", 5, None):
        assert valid_timestamp(bad) is None
