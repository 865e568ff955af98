"""Which Codex wrote a rollout decides where its messages are read from (codex.md §5.1):
the items when it writes them, the model-facing history only for a rollout without."""

from __future__ import annotations

from pathlib import Path

from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import mapped_cleanly

SID = "01a2330d-0000-7000-8000-0000000000f1"


def _mapped(sessions: Path, version: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str | None]]]:
    root = RolloutWriter(SID, cli_version=version)
    root.begin("t1")
    root.user("u1", "MARK: list the files", "t1")
    root.command("c1", "ls", "t1", output="a\n")
    root.agent("m1", "One file.", "t1")
    root.task_complete("t1")
    root.write(sessions)
    mapped = mapped_cleanly(sessions, SID)
    steps = [(row.record["id"], row.record["type"], row.record["turn_id"]) for row in mapped.steps]
    return steps, [(turn["id"], turn.get("prompt_id")) for turn in mapped.turns]


def test_a_codex_built_from_source_is_read_from_its_items(tmp_path: Path) -> None:
    # A source build says cli_version 0.0.0 and writes items as the release does: its
    # environment context and its prompt's history line are no steps, the prompt is once.
    release = _mapped(tmp_path / "release", "0.171.0")
    assert release == (
        [("u1", "message", "t1"), ("c1", "command", "t1"), ("m1", "message", "t1")],
        [("t1", "u1")],
    )
    assert _mapped(tmp_path / "source", "0.0.0") == release
