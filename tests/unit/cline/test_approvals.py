"""Decisions from Cline's auto-approval settings: the decision table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from postrun.agents.cline import approval_snapshot, decision_for
from tests.unit.cline.kit import FIXTURES, MAX_BYTES

# The decision for other tool steps: each category's default when absent.
VSCODE_DEFAULTS = {
    "readFiles": True,
    "editFiles": True,
    "executeSafeCommands": False,
    "useBrowser": True,
    "useMcp": True,
}


def vscode_state(tmp_path: Path, actions: Any, **extra: Any) -> Path:
    state = {"autoApprovalSettings": {"version": 7, "enabled": False, "actions": actions}, **extra}
    (tmp_path / "globalState.json").write_text(json.dumps(state))
    return tmp_path


def cli_settings(tmp_path: Path, text: str) -> Path:
    (tmp_path / "settings").mkdir()
    (tmp_path / "settings" / "global-settings.json").write_text(text)
    return tmp_path


def test_vscode_snapshot_reads_the_five_actions() -> None:
    snapshot = approval_snapshot(FIXTURES / "cline" / "basic_act" / "data", "vscode", max_bytes=MAX_BYTES)
    assert snapshot == {
        "kind": "vscode",
        "actions": {
            "readFiles": True,
            "editFiles": False,
            "executeSafeCommands": True,
            "useBrowser": False,
            "useMcp": False,
        },
        "settings": "read",
    }
    orjson.dumps(snapshot)


def test_vscode_snapshot_fills_absent_and_odd_keys_with_defaults(tmp_path: Path) -> None:
    data = vscode_state(tmp_path, {"editFiles": False, "useMcp": "yes", "executeAllCommands": True})
    snapshot = approval_snapshot(data, "vscode", max_bytes=MAX_BYTES)
    assert snapshot["actions"] == {**VSCODE_DEFAULTS, "editFiles": False}


@pytest.mark.parametrize(
    ("content", "settings"),
    [
        (None, "missing"),
        ('{"autoApprovalSettings": {"act', "unreadable"),
        ("[1]", "unreadable"),
        ('{"mode": "act"}', "read"),
    ],
)
def test_vscode_defaults_when_settings_are_missing_or_unreadable(
    tmp_path: Path, content: str | None, settings: str
) -> None:
    if content is not None:
        (tmp_path / "globalState.json").write_text(content)
    for source in ("vscode", None, "jetbrains"):
        assert approval_snapshot(tmp_path, source, max_bytes=MAX_BYTES) == {
            "kind": "vscode",
            "actions": VSCODE_DEFAULTS,
            "settings": settings,
        }


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, {"kind": "cli", "tool_auto_approve": True, "settings": "missing"}),
        ('{"planActMode": "act"}', {"kind": "cli", "tool_auto_approve": True, "settings": "read"}),
        ('{"toolAutoApprove": false}', {"kind": "cli", "tool_auto_approve": False, "settings": "read"}),
        ('{"toolAutoApprove": true}', {"kind": "cli", "tool_auto_approve": True, "settings": "read"}),
        ('{"toolAutoApp', {"kind": "cli", "tool_auto_approve": True, "settings": "unreadable"}),
    ],
)
def test_cli_snapshot(tmp_path: Path, content: str | None, expected: dict[str, Any]) -> None:
    vscode_state(tmp_path, {"readFiles": False})  # the CLI never reads globalState.json
    if content is not None:
        cli_settings(tmp_path, content)
    assert approval_snapshot(tmp_path, "cli", max_bytes=MAX_BYTES) == expected


CATEGORIES = {
    "readFiles": [
        "read_files",
        "search_codebase",
        "read_file",
        "list_files",
        "search_files",
        "list_code_definition_names",
    ],
    "editFiles": ["editor", "apply_patch", "write_to_file", "replace_in_file", "delete_file"],
    "executeSafeCommands": ["run_commands", "execute_command"],
    "useBrowser": ["fetch_web_content", "web_fetch", "web_search"],
    "useMcp": ["github__create_issue", "my-server__do_it", "x__y"],
}
NEVER_GATED = ["ask_question", "skills", "spawn_agent", "switch_to_act_mode", "submit_and_exit", "team_status", "__x"]


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_vscode_decisions_follow_each_category(category: str) -> None:
    for on in (True, False):
        snapshot = {"kind": "vscode", "actions": {**VSCODE_DEFAULTS, category: on}}
        for tool in CATEGORIES[category]:
            assert decision_for(tool, snapshot, approval_was_on=False) == ("auto" if on else "accepted"), tool
            # The CLI rule does not apply to VS Code sessions.
            assert decision_for(tool, snapshot, approval_was_on=True) == ("auto" if on else "accepted"), tool


def test_never_gated_tools_are_auto() -> None:
    nothing_auto = {"kind": "vscode", "actions": dict.fromkeys(VSCODE_DEFAULTS, False)}
    for tool in NEVER_GATED:
        assert decision_for(tool, nothing_auto, approval_was_on=False) == "auto", tool


def test_unknown_snapshot_reads_as_vscode_defaults() -> None:
    odd_actions = {"kind": "vscode", "actions": {"executeSafeCommands": 1, "editFiles": None}}
    for snapshot in ({}, {"kind": "none"}, {"kind": "vscode", "actions": "odd"}, odd_actions):
        assert decision_for("run_commands", snapshot, approval_was_on=False) == "accepted"
        assert decision_for("editor", snapshot, approval_was_on=False) == "auto"


CLI_ALWAYS_AUTO = ["read_files", "search_codebase", "fetch_web_content", "ask_question", "skills", "submit_and_exit"]
CLI_GATED = ["run_commands", "editor", "apply_patch", "spawn_agent", "switch_to_act_mode", "github__create_issue"]


def test_cli_decisions() -> None:
    auto_on = {"kind": "cli", "tool_auto_approve": True}
    auto_off = {"kind": "cli", "tool_auto_approve": False}
    for tool in CLI_ALWAYS_AUTO + CLI_GATED:
        assert decision_for(tool, auto_on, approval_was_on=False) == "auto", tool
    for tool in [*CLI_ALWAYS_AUTO, "ask_followup_question"]:
        assert decision_for(tool, auto_off, approval_was_on=False) == "auto", tool
        assert decision_for(tool, auto_on, approval_was_on=True) == "auto", tool
    for tool in CLI_GATED:
        assert decision_for(tool, auto_off, approval_was_on=False) == "accepted", tool
        # A transcript showing an approval refusal ran with approval on, whatever was stored.
        assert decision_for(tool, auto_on, approval_was_on=True) == "accepted", tool
