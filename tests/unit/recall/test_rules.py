"""Recall's pure rules: which steps name a file, the cuts, the clients' registration snippets."""

from __future__ import annotations

import json
import shlex
import tomllib
from typing import Any

import pytest

from postrun.errors import UsageError
from postrun.recall.bounds import cut, cut_strings, fit, text_size
from postrun.recall.citations import review_url, show_command
from postrun.recall.clients import CLIENTS, client_config
from postrun.recall.paths import index_phrase, names_path, target_path

TARGET = "/w/app/src/auth.py"


def _command(line: str, cwd: str | None = "/w/app") -> dict[str, Any]:
    payload: dict[str, Any] = {"command": line}
    if cwd is not None:
        payload["cwd"] = cwd
    return {"type": "command", "payload": payload}


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("cat src/auth.py", True),
        ("pytest ./src/auth.py -x", True),
        ("sed -n 1,5p '/w/app/src/auth.py'", True),
        ("grep -n login src/auth.py:12", True),
        ("vim src/auth.py; make", True),
        ("cat src/auth.pyc", False),
        ("cat lib/src/auth.py", False),
        ("cat src/auth.py.bak", False),
        ("cat auth.py", False),  # in /w/app, that is /w/app/auth.py
        ("cat /x/w/app/src/auth.py", False),
    ],
)
def test_a_command_names_a_file_by_its_path(line: str, names: bool) -> None:
    assert names_path(_command(line), TARGET, "/w/app") is names


def test_a_command_without_cwd_runs_in_the_workspace() -> None:
    assert names_path(_command("cat auth.py", cwd=None), "/w/app/auth.py", "/w/app")
    assert names_path(_command("cat auth.py", cwd="/w/app/src"), TARGET, "/w/app")


def test_edits_and_reads_name_the_file_their_path_resolves_to() -> None:
    assert names_path({"type": "edit", "payload": {"path": TARGET}}, TARGET, "/elsewhere")
    assert names_path({"type": "read", "payload": {"path": "src/../src/auth.py"}}, TARGET, "/w/app")
    assert not names_path({"type": "read", "payload": {"path": "/w/app/src/auth.pyi"}}, TARGET, "/w/app")
    assert not names_path({"type": "message", "payload": {"text": TARGET}}, TARGET, "/w/app")


def test_the_path_looked_for() -> None:
    assert target_path("/w/app/./src//auth.py", None) == TARGET
    assert target_path("src/auth.py", "/w/app") == TARGET
    for path, workspace in (("src/auth.py", None), ("", "/w"), ("a.py", "relative/ws")):
        with pytest.raises(UsageError):
            target_path(path, workspace)
    assert index_phrase(TARGET) == '"auth py"'
    with pytest.raises(UsageError):
        index_phrase("/w/app/...")


def test_cuts_say_how_much_is_left() -> None:
    assert cut("short", 10) == "short"
    assert cut("abcdefghij" * 3, 10) == "abcdefghij… [cut: 20 more characters]"
    tree, count = cut_strings({"a": "x" * 20, "b": ["y" * 5, {"c": "z" * 30}], "n": 3}, 10)
    assert count == 2 and tree["b"][0] == "y" * 5 and tree["n"] == 3
    assert tree["b"][1]["c"].startswith("z" * 10 + "… [cut: 20")
    assert text_size({"a": "xy", "b": ["z", 1, None]}) == 3


def test_fit_cuts_long_lists_and_nested_objects_not_the_top() -> None:
    small = {"path": "/a", "lines": ["+x", "-y"], "n": 3}
    assert fit(small, 100) == (small, 0)
    payload = {"lines": [f"+{n:03d}" for n in range(100)], "path": "/a", "raw": {str(n): n for n in range(50)}}
    shown, cuts = fit(payload, 30)
    # Plain values are counted first (path), then the lines until 30 characters are spent.
    assert shown["path"] == "/a" and shown["lines"] == [*payload["lines"][:5], "… [cut: 95 more items]"]
    assert shown["raw"] == {"…": "[cut: 50 more keys]"} and cuts == 2
    hunk = {"lines": ["+x" * 10] * 5, "oldStart": 1, "newStart": 1}
    shown, cuts = fit({"patch": [hunk, hunk]}, 40)  # the line numbers first, then one line
    assert shown["patch"][0] == {"lines": ["+x" * 10, "… [cut: 4 more items]"], "oldStart": 1, "newStart": 1}
    assert shown["patch"][1:] == ["… [cut: 1 more items]"] and cuts == 2


def test_citations() -> None:
    assert show_command("1790_ab") == "postrun show 1790_ab"
    assert show_command("a b") == "postrun show 'a b'"
    assert review_url("http://127.0.0.1:8765/", "1790_ab", 5) == "http://127.0.0.1:8765/s/1790_ab#step-5"
    assert review_url("http://[::1]:9/", "x/y#z") == "http://[::1]:9/s/x%2Fy%23z"


COMMAND = ("/home/me/.local/bin/postrun", "--db", '/data/my "store".db', "mcp")


def test_each_client_gets_its_own_format() -> None:
    claude = client_config("claude-code", COMMAND)
    words = shlex.split(claude)
    assert words[:7] == ["claude", "mcp", "add", "--scope", "user", "--transport", "stdio"]
    assert words[7:9] == ["postrun", "--"] and tuple(words[9:]) == COMMAND
    codex = tomllib.loads(client_config("codex", COMMAND))
    assert codex == {"mcp_servers": {"postrun": {"command": COMMAND[0], "args": list(COMMAND[1:])}}}
    cline = json.loads(client_config("cline", COMMAND))
    assert cline["mcpServers"]["postrun"] == {
        "command": COMMAND[0],
        "args": list(COMMAND[1:]),
        "disabled": False,
        "autoApprove": [],
    }
    assert CLIENTS == ("claude-code", "codex", "cline")
    with pytest.raises(UsageError, match="unknown client 'cursor'"):
        client_config("cursor", COMMAND)
