"""Which Codex wrote a rollout decides where its messages are read from (codex.md §5.1):
the items when it writes them, the model-facing history only for a rollout without."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.codex import SessionLocation, map_session, rollout_at
from postrun.agents.codex.reading import read_session
from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import MAX_BYTES, mapped_cleanly, remap

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


def test_a_rollout_with_items_is_read_from_them_whatever_its_version_says(tmp_path: Path) -> None:
    # codex.md §5.1: the history is read as steps only "for a legacy rollout (no item_completed
    # anywhere)"; a version missing, or one older than the items, is not the signal.
    release = _mapped(tmp_path / "release", "0.171.0")
    assert _mapped(tmp_path / "none", "") == release
    assert _mapped(tmp_path / "old", "0.100.0") == release


def test_a_rollout_read_before_its_first_item_is_read_again_whole_once_items_come(tmp_path: Path) -> None:
    # Caught live before its first item, a rollout with no version is read from its history;
    # once an item comes, the cached fold must not keep those steps: the result is a fresh read's.
    sessions = tmp_path / "sessions"
    root = RolloutWriter(SID, cli_version=None)
    root.begin("t1")
    root.response(
        {"type": "message", "id": "msg_u1", "role": "user", "content": [{"type": "input_text", "text": "MARK"}]}
    )
    path = root.write(sessions)
    rollout = rollout_at(path)
    assert rollout is not None
    location = SessionLocation(SID, rollout, ())
    early, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    assert [row.record["payload"]["role"] for row in early.steps] == ["system", "user"]
    root.item("t1", {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": "MARK"}]})
    root.command("c1", "ls", "t1", output="a\n")
    root.task_complete("t1")
    root.write(sessions)
    files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
    assert files.root.read.start == 0
    later, _ = remap(files, read_session(location, max_bytes=MAX_BYTES), cache)
    assert [row.id for row in later.steps] == ["u1", "c1"]
    assert [(turn["id"], turn.get("prompt_id")) for turn in later.turns] == [("t1", "u1")]
