"""The thread index reads each rollout's first line once and knows each child's session."""

from __future__ import annotations

from pathlib import Path

import pytest

from postrun.agents.codex import index as index_module
from postrun.agents.codex import list_rollouts
from postrun.agents.codex.index import ThreadIndex
from postrun.agents.codex.reading import read_meta
from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import MAX_BYTES

ROOT = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"


def test_each_first_line_is_read_once_and_a_child_names_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = tmp_path / "sessions"
    root = RolloutWriter(ROOT)
    root.begin("t1")
    child = RolloutWriter(CHILD, parent=ROOT, start_ms=root.clock + 100)
    child.task_started("ct1")
    child_path = child.write(sessions, lines=0)  # created empty first, as Codex does
    reads: list[str] = []

    def counting(rollout, *, max_bytes):  # type: ignore[no-untyped-def]
        reads.append(rollout.thread_id)
        return read_meta(rollout, max_bytes=max_bytes)

    monkeypatch.setattr(index_module, "read_meta", counting)
    index = ThreadIndex(MAX_BYTES)
    first = index.sessions(list_rollouts(sessions))
    assert first.sessions == () and [r.thread_id for r in first.unwritten] == [CHILD]
    assert index.session_of(child_path) is None  # its first line is not written yet
    child.write(sessions)
    root_path = root.write(sessions)
    second = index.sessions(list_rollouts(sessions))
    assert [(s.session_id, [c.thread_id for c in s.children]) for s in second.sessions] == [(ROOT, [CHILD])]
    assert index.session_of(child_path) == ROOT and index.session_of(root_path) == ROOT
    index.sessions(list_rollouts(sessions))
    assert sorted(reads) == sorted([CHILD, CHILD, CHILD, ROOT])  # the child until its first line came
    assert index.folders(ROOT) == (root_path.parent,)


def test_a_rollout_whose_first_line_is_no_session_meta_is_skipped_with_a_warning(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    root = RolloutWriter(ROOT)
    root.begin("t1")
    root.write(sessions)
    day = next(sessions.rglob("*.jsonl")).parent
    junk = day / f"rollout-2026-12-02T10-00-00-{CHILD}.jsonl"
    junk.write_bytes(b'{"type":"event_msg","payload":{}}')  # not written whole yet: it waits
    first = ThreadIndex(MAX_BYTES).sessions(list_rollouts(sessions))
    assert [r.path for r in first.unwritten] == [junk] and first.unreadable == ()
    junk.write_bytes(b'{"type":"event_msg","payload":{}}\n')  # written: never a rollout
    second = ThreadIndex(MAX_BYTES).sessions(list_rollouts(sessions))
    assert [s.session_id for s in second.sessions] == [ROOT] and second.unwritten == ()
    assert [(e.path, e.reason, e.warn) for e in second.unreadable] == [
        (junk, "not a Codex rollout: its first line is not a session_meta record", True)
    ]
