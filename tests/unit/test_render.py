"""The pure parts of ``show``: a step's key input and the first line of its error."""

from __future__ import annotations

from typing import Any

import pytest

from postrun.render import error_line, key_input


@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        ("date parsing", "date parsing"),  # a batched search's request is its query
        ({"systemPrompt": "You review code.", "task": "Review config.py"}, "Review config.py"),
        ({"question": "Which port?", "options": ["80", "8080"]}, "Which port?"),
        ({"prompt": "summarize", "url": "https://example.com"}, "https://example.com"),
        ({"count": 3, "label": "", "body": "first text field"}, "first text field"),
        ({}, None),
        ("", None),
        (None, None),
        (["a"], None),
    ],
)
def test_key_input(tool_input: Any, expected: str | None) -> None:
    assert key_input(tool_input) == expected


def test_error_line_is_the_first_line_of_a_failed_step_s_error() -> None:
    failed = {"outcome": "failed", "error": {"type": "cline_tool_error", "message": "\nboom: no such file\nat x.py:3"}}
    assert error_line(failed) == "boom: no such file"
    assert error_line({**failed, "outcome": "ok"}) is None
    assert error_line({"outcome": "failed"}) is None
    assert error_line({"outcome": "failed", "error": {"type": "t", "message": "  "}}) is None
