"""The real Claude Code CLI as the MCP client of ``postrun mcp``, its model scripted on loopback.

The model calls ``search`` then ``get_steps`` (MCP tools are deferred in this CLI: a
``ToolSearch`` selects them first); what reaches the model is read from its request log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import postrun_command
from tests.support.claude_cli import claude_cli, run_print_mode, scripted_model
from tests.support.recall import BASIC, build_recall_store

MARKER = "RECALL-CHECK"


def _conversation(requests: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, tuple[str, bool]]]:
    """From the last request (it holds the whole conversation): tool names by call id, and
    each call's result text and whether it was an error."""
    calls: dict[str, str] = {}
    results: dict[str, tuple[str, bool]] = {}
    for message in requests[-1]["messages"]:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                body = block.get("content")
                text = body if isinstance(body, str) else "".join(part.get("text", "") for part in body or [])
                results[block["tool_use_id"]] = (text, bool(block.get("is_error")))
    return calls, results


def test_claude_code_finds_and_reads_an_earlier_step(tmp_path: Path) -> None:
    claude = claude_cli()
    store = build_recall_store(tmp_path / "recall")
    program, *more = postrun_command()
    server_env = {key: store.env[key] for key in store.env if key.startswith(("XDG_", "POSTRUN_")) or key == "HOME"}
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"postrun": {"command": program, "args": [*more, "mcp"], "env": server_env}}})
    )
    script = {
        "max_requests": 20,
        "routes": [
            {
                "name": "recall",
                "match": MARKER,
                "steps": [
                    [{"tool": "ToolSearch", "args": {"query": "select:mcp__postrun__search,mcp__postrun__get_steps"}}],
                    [
                        {
                            "tool": "mcp__postrun__search",
                            "args": {"query": "date test", "outcome": "failed", "workspace": "/home/dev/app"},
                        }
                    ],
                    [{"tool": "mcp__postrun__get_steps", "args": {"session_id": BASIC, "around_seq": 5, "limit": 3}}],
                    [{"text": "The date test failed in npm test; see the cited step."}],
                ],
            }
        ],
    }
    with scripted_model(tmp_path, script) as model:
        done = run_print_mode(
            claude,
            f"{MARKER}: how did we fix the failing date test?",
            home=tmp_path / "claude-home",
            model=model,
            mcp_config=config,
            cwd=tmp_path,
        )
        requests = model.requests()
    final = json.loads(done.stdout.strip().splitlines()[-1])
    assert final["type"] == "result" and final["is_error"] is False, final
    calls, results = _conversation(requests)
    by_tool = {calls[call_id]: result for call_id, result in results.items()}
    assert set(by_tool) >= {"ToolSearch", "mcp__postrun__search", "mcp__postrun__get_steps"}, calls
    found_text, found_error = by_tool["mcp__postrun__search"]
    assert not found_error, found_text
    hits = json.loads(found_text)["hits"]
    assert [(h["session_id"], h["seq"], h["step_id"]) for h in hits] == [(BASIC, 5, "toolu_cmd1#0")]
    assert hits[0]["show"] == f"postrun show {BASIC}" and hits[0]["url"].endswith(f"/s/{BASIC}#step-5")
    steps_text, steps_error = by_tool["mcp__postrun__get_steps"]
    assert not steps_error, steps_text
    steps = json.loads(steps_text)["steps"]
    assert [step["seq"] for step in steps] == [4, 5, 6]
    failing = steps[1]
    assert failing["id"] == "toolu_cmd1#0" and failing["outcome"] == "failed"
    assert failing["payload"] == {
        "command": "npm test -- date",
        "cwd": "/home/dev/app",
        "exit_code": 1,
        "stderr": "npm ERR! code 1",
        "stdout": "FAIL test/date.test.ts",
    }


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))
