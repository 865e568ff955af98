"""The benchmark's synthetic Claude Code history is real Claude Code input: it maps to valid
records with every call answered, sub-agents linked, and mostly metadata bytes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.claude_history import write_claude_history
from postrun.agents.claude_code import list_sessions, map_session, read_session

MAX_BYTES = 64 * 2**20


def test_generated_sessions_map_to_valid_records(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    totals = write_claude_history(root, seed=3, sessions=8, mean_turns=2)
    listing = list_sessions(root)
    assert sorted(location.transcript for location in listing.sessions) == sorted(totals.transcripts)
    types: Counter[str] = Counter()
    calls = subagents = 0
    for location in listing.sessions:
        mapped, _ = map_session(read_session(location, max_bytes=MAX_BYTES))
        mapped.validate()
        assert "ended_at" in mapped.session and mapped.session["metrics"]["cost_usd"] > 0
        assert all(row.record["outcome"] == "ok" for row in mapped.steps)
        types.update(row.record["type"] for row in mapped.steps)
        calls += sum(1 for row in mapped.steps if row.record["type"] != "message" and row.record["actor_id"] == "root")
        subagents += len(mapped.actors) - 1
        for row in mapped.steps:
            if row.record["payload"].get("tool_name") == "Agent":
                assert row.record["payload"]["raw"]["actor_id"] in {actor["id"] for actor in mapped.actors}
    assert calls == totals.tool_calls and subagents == totals.subagents > 0
    assert set(types) == {"message", "command", "read", "edit", "other"}
    assert 0.1 < totals.message_bytes / totals.bytes < 0.35  # mostly metadata, as in the real files


def test_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    first = write_claude_history(tmp_path / "a", seed=11, sessions=3, mean_turns=1)
    second = write_claude_history(tmp_path / "b", seed=11, sessions=3, mean_turns=1)
    for one, other in zip(first.transcripts, second.transcripts, strict=True):
        assert one.read_bytes() == other.read_bytes()
        assert one.relative_to(tmp_path / "a") == other.relative_to(tmp_path / "b")
