"""The benchmark's synthetic history is real Cline input: the adapter maps it to valid records."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.history import HISTORY_END_MS, MESSAGES_PER_TURN, TOOLS_PER_TURN, dumps, write_history
from bench.run import FULL, QUICK, large_open_session
from postrun.agents.cline import list_sessions, map_session, read_session

MAX_BYTES = 64 * 2**20


def test_generated_sessions_map_to_valid_records(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    totals = write_history(root, seed=3, sessions=3, mean_turns=2)

    listing = list_sessions(root)
    assert [s.session_id for s in listing.sessions] == sorted(w.session_id for w in totals.written)
    types: Counter[str] = Counter()
    for location in listing.sessions:
        files = read_session(location, max_bytes=MAX_BYTES)
        assert files.manifest is not None and "ended_at" in files.manifest
        mapped, _ = map_session(files, {"kind": "cli", "tool_auto_approve": True, "settings": "missing"})
        mapped.validate()
        turns = len(mapped.turns)
        # Per turn: the prompt, 12 calls each with their assistant text, the closing reply.
        assert len(files.messages["messages"]) == turns * MESSAGES_PER_TURN
        assert len(mapped.steps) == turns * (2 + 2 * TOOLS_PER_TURN)
        assert all(row.record["outcome"] == "ok" for row in mapped.steps)
        types.update(row.record["type"] for row in mapped.steps)
    assert set(types) == {"message", "command", "read", "edit"}


def test_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    first = write_history(tmp_path / "a", seed=11, sessions=2, mean_turns=1)
    second = write_history(tmp_path / "b", seed=11, sessions=2, mean_turns=1)
    for one, other in zip(first.written, second.written, strict=True):
        assert one.messages_path.read_bytes() == other.messages_path.read_bytes()
        assert one.manifest_path.read_bytes() == other.manifest_path.read_bytes()


def test_the_large_open_session_is_issue_27s_11_mb_and_2600_steps() -> None:
    # Issue 27 names the figure's session by size and steps: 11 MB, 2,600 steps in 100 turns.
    # Grown by bytes alone, this generator's turns are larger and the session fell short
    # (2,314-2,496 steps for the seeds a run uses), which flatters the figures it feeds.
    for profile in (QUICK, FULL):
        for seed in (7099, 7199, 7400):  # the live phases' and the busy phase's, at the default seed
            writer = large_open_session(profile, seed, HISTORY_END_MS)
            assert len(writer.messages) >= 2_600  # one step a message (see above)
            assert len(dumps(writer.messages_document())) >= 11 * 2**20


def test_a_history_with_a_least_size_draws_smaller_sessions_again(tmp_path: Path) -> None:
    plain = write_history(tmp_path / "plain", seed=5, sessions=6, mean_turns=1, exact=True)
    sizes = sorted(session.messages_path.stat().st_size for session in plain.written)
    least = sizes[len(sizes) // 2]  # about half of them would be smaller
    kept = write_history(tmp_path / "kept", seed=5, sessions=6, mean_turns=1, exact=True, min_bytes=least)
    assert len(kept.written) == 6
    assert all(session.messages_path.stat().st_size >= least for session in kept.written)
    again = write_history(tmp_path / "again", seed=5, sessions=6, mean_turns=1, exact=True, min_bytes=least)
    for one, other in zip(kept.written, again.written, strict=True):
        assert one.messages_path.read_bytes() == other.messages_path.read_bytes()


def test_the_large_shape_is_issue_27s_60_sessions_a_run_of_260_steps_and_1_mb_each() -> None:
    for profile in (QUICK, FULL):
        [large] = [shape for shape in profile.shapes if shape.name == "large"]
        assert large.sessions == 60 * profile.cold_runs
        assert large.exact and large.turns * MESSAGES_PER_TURN == 260
        assert large.min_bytes == 2**20
