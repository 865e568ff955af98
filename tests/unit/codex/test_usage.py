"""Token usage over a session's rollouts: each model response counted once (codex.md §4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from postrun.agents.codex.usage import Usage, session_metrics
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


def test_a_record_naming_another_thread_is_that_threads_even_without_a_response_id(tmp_path: Path) -> None:
    # Without a response id a record is keyed by its line; whose it is, by its thread id. The
    # child's own record (no thread id: its rollout's) counts for it; its record naming the root
    # is the root's, which the root's rollout counts (the same line number in both, the shorter
    # rollout padded with lines nothing reads).
    root, child = delegating(SID, CHILD)
    for writer in (root, child):
        while len(writer.lines) < max(len(root.lines), len(child.lines)):
            writer.add("world_state", {})
    root.add("token_usage_record", {"thread_id": SID, "usage": {"input_tokens": 10, "output_tokens": 1}})
    child.add("token_usage_record", {"usage": {"input_tokens": 20, "output_tokens": 2}})
    child.add("token_usage_record", {"thread_id": SID, "usage": {"input_tokens": 10, "output_tokens": 1}})
    for writer in (root, child):
        writer.write(tmp_path / "sessions")

    mapped = mapped_cleanly(tmp_path / "sessions", SID)

    assert (mapped.session["metrics"]["api_requests"], mapped.session["metrics"]["tokens"]["input"]) == (2, 30)
    assert (mapped.helper_metrics[CHILD]["api_requests"], mapped.helper_metrics[CHILD]["tokens"]["input"]) == (1, 20)


def _record(thread_id: str, response_id: str, input_tokens: int) -> dict[str, Any]:
    return {"thread_id": thread_id, "response_id": response_id, "usage": {"input_tokens": input_tokens}}


def test_a_copy_counts_only_when_its_thread_is_not_in_the_session() -> None:
    # Root -> A -> B, B's rollout copying A's response. A kept as the store holds it (its rollout
    # unreadable: only its totals) still counts that response itself: the copy adds nothing. A
    # thread that is not in the session at all leaves its copies to count, once.
    root, kept, grandchild = Usage(), Usage(), Usage()
    root.count(_record(SID, "resp_root", 1000), SID, 1)
    kept.requests, kept.sums = 1, [500, 0, 0, 0]  # A's stored share: resp_a
    grandchild.count(_record("thread-a", "resp_a", 500), "thread-b", 1)
    grandchild.count(_record("thread-b", "resp_b", 70), "thread-b", 2)
    grandchild.count(_record("thread-gone", "resp_x", 3), "thread-b", 3)
    other = Usage()
    other.count(_record("thread-gone", "resp_x", 3), "thread-c", 1)

    metrics = session_metrics([(SID, root), ("thread-a", kept), ("thread-b", grandchild), ("thread-c", other)])

    assert metrics is not None
    assert (metrics["api_requests"], metrics["tokens"]["input"]) == (4, 1000 + 500 + 70 + 3)
    assert grandchild.metrics() == {
        "cost_usd": 0,
        "api_requests": 1,
        "tokens": {"input": 70, "cache_read": 0, "cache_creation": 0, "output": 0},
    }
