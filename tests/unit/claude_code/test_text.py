"""postrun.agents.claude_code.text: which user lines are a person's prompts."""

from __future__ import annotations

from postrun.agents.claude_code.text import is_prompt


def test_a_sub_agent_s_line_is_no_prompt() -> None:
    """Claude Code before the sub-agents' own files wrote a sub-agent's lines in the main
    transcript (``isSidechain: true``), the task's prompt first: that is no person's prompt."""
    assert not is_prompt({"type": "user", "isSidechain": True}, "Look for config files")
    assert is_prompt({"type": "user", "isSidechain": False}, "Look for config files")
