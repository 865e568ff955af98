"""Token usage over a session's rollouts: each model response counted once (codex.md §4)."""

from __future__ import annotations

from pathlib import Path

from tests.support.codex_rollouts import delegating
from tests.unit.codex.kit import mapped_cleanly

SID = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"


def test_a_response_whose_record_two_rollouts_hold_is_counted_once(tmp_path: Path) -> None:
    # A child's rollout may start with a copy of its parent's history: the copied record keeps
    # the parent's thread id and response id. Before, each rollout counted its own records and
    # the session added them up, so the parent's response was counted twice.
    root, child = delegating(SID, CHILD)
    root.tokens("resp_root", "t1", input_tokens=1000, output=50, cached=200)
    (copied,) = [line for line in root.lines if line["type"] == "token_usage_record"]
    child.add("token_usage_record", copied["payload"])
    child.tokens("resp_child", "ct1", input_tokens=300, output=7)
    for writer in (root, child):
        writer.write(tmp_path / "sessions")

    mapped = mapped_cleanly(tmp_path / "sessions", SID)

    assert mapped.session["metrics"] == {
        "cost_usd": 0,
        "api_requests": 2,
        "tokens": {"input": 1300, "cache_read": 200, "cache_creation": 0, "output": 57},
    }
    # The helper's own share is its own response: the copy is its parent's.
    assert mapped.helper_metrics[CHILD]["api_requests"] == 1
    assert mapped.helper_metrics[CHILD]["tokens"]["input"] == 300


def test_records_without_a_response_id_are_each_rollouts_own(tmp_path: Path) -> None:
    # Keyed by their line, as before, and by their own rollout's thread: the same line of two
    # rollouts (the shorter one padded with lines nothing reads) is two responses.
    root, child = delegating(SID, CHILD)
    for writer in (root, child):
        while len(writer.lines) < max(len(root.lines), len(child.lines)):
            writer.add("world_state", {})
    root.add("token_usage_record", {"thread_id": SID, "usage": {"input_tokens": 10, "output_tokens": 1}})
    child.add("token_usage_record", {"thread_id": SID, "usage": {"input_tokens": 20, "output_tokens": 2}})
    for writer in (root, child):
        writer.write(tmp_path / "sessions")

    metrics = mapped_cleanly(tmp_path / "sessions", SID).session["metrics"]
    assert (metrics["api_requests"], metrics["tokens"]["input"]) == (2, 30)
