"""The benchmark's synthetic Codex history is real Codex input: it maps to valid records with
every call answered and its sub-agents linked, and its bytes are mostly Codex's context."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.codex_history import write_codex_history
from postrun.agents.codex import group_sessions, list_rollouts, map_session
from postrun.agents.codex.reading import read_metas, read_session

MAX_BYTES = 64 * 2**20


def test_generated_sessions_map_to_valid_records(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    totals = write_codex_history(root, seed=3, sessions=12, mean_turns=2)
    listing = list_rollouts(root)
    assert sorted(rollout.path for rollout in listing.rollouts) == sorted(totals.rollouts)
    metas, problems = read_metas(listing.rollouts, max_bytes=MAX_BYTES)
    assert problems == {}
    sessions = group_sessions(listing.rollouts, metas)
    assert len(sessions) == totals.sessions and sum(1 + len(s.children) for s in sessions) == totals.threads
    types: Counter[str] = Counter()
    calls = 0
    for location in sessions:
        mapped, _ = map_session(read_session(location, max_bytes=MAX_BYTES))
        mapped.validate()
        assert "ended_at" in mapped.session and mapped.session["metrics"]["api_requests"] > 0
        assert all(row.record["outcome"] in ("ok", "failed") for row in mapped.steps)
        types.update(row.record["type"] for row in mapped.steps)
        calls += sum(1 for row in mapped.steps if row.record["type"] in ("command", "edit"))
        actors = {actor["id"] for actor in mapped.actors}
        for row in mapped.steps:
            if row.record["payload"].get("tool_name") == "spawn_agent":
                assert row.record["payload"]["raw"]["actor_id"] in actors
    assert calls == totals.tool_calls > 0
    assert set(types) == {"message", "command", "edit", "other"}
    assert totals.threads > totals.sessions  # sub-agents in rollouts of their own


def test_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    first = write_codex_history(tmp_path / "a", seed=11, sessions=3, mean_turns=1)
    second = write_codex_history(tmp_path / "b", seed=11, sessions=3, mean_turns=1)
    for one, other in zip(first.rollouts, second.rollouts, strict=True):
        assert one.read_bytes() == other.read_bytes()
        assert one.relative_to(tmp_path / "a") == other.relative_to(tmp_path / "b")
