"""Codex as capture sees it: the source's listing, events, stamps; the adapter's fingerprints."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.codex.adapter import ADAPTER, CodexSource
from postrun.agents.codex.layout import SessionLocation
from postrun.agents.registry import AgentRoot
from tests.support.codex_rollouts import RolloutWriter

ROOT = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"
OTHER = "01a2330d-9999-79c1-aa53-fa5925b71fc2"
DAY_MS = 86_400_000


def _writers() -> tuple[RolloutWriter, RolloutWriter]:
    root = RolloutWriter(ROOT)
    root.begin("t1")
    root.user("u1", "MARK: go", "t1")
    child = RolloutWriter(CHILD, parent=ROOT, nickname="Dirac", start_ms=root.clock + DAY_MS)
    child.task_started("ct1", parent_turn="t1", root_turn="t1")
    return root, child


def test_a_listing_holds_root_threads_only_and_skips_what_is_not_a_session_yet(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    root, child = _writers()
    child.write(sessions)
    empty = RolloutWriter(OTHER).write(sessions, lines=0)
    source = ADAPTER.source(AgentRoot(sessions, "test"))
    first = source.list()
    assert first.sessions == ()
    reasons = {entry.path.name: (entry.reason, entry.warn) for entry in first.skipped}
    assert reasons[empty.name] == ("its first line is not written yet", False)
    assert "whose own rollout is not there yet" in reasons[child.name()][0]
    root_path = root.write(sessions)
    second = source.list()
    assert [(s.session_id, [c.thread_id for c in s.children]) for s in second.sessions] == [(ROOT, [CHILD])]
    assert source.location(ROOT) == second.sessions[0]
    assert source.listing_key(second) == source.names_key()
    entry = next(e for e in first.skipped if e.path == empty)
    assert not source.ripe(entry)
    RolloutWriter(OTHER).write(sessions)
    assert source.ripe(entry)  # its first line came: a session now
    assert source.session_for_event(str(root_path)) == ROOT


def test_a_new_childs_event_names_its_session_and_joins_its_location(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    root, child = _writers()
    root_path = root.write(sessions)
    source = CodexSource(sessions)
    source.list()
    stamp = source.listing_stamp()
    child_path = child.write(sessions)  # the next day's folder: the root's own mtime does not move
    assert source.listing_stamp() != stamp
    assert source.session_for_event(str(child_path)) == ROOT
    assert [c.thread_id for c in source.location(ROOT).children] == [CHILD]
    assert set(source.watch_folders(ROOT)) == {root_path.parent, child_path.parent}
    assert source.session_for_event(str(sessions / "notes.txt")) is None


def test_a_fingerprint_is_the_rollouts_root_first_and_empty_once_the_root_is_gone(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    root, child = _writers()
    root_path, child_path = root.write(sessions), child.write(sessions)
    source = CodexSource(sessions)
    location = source.list().sessions[0]
    assert [Path(f.path) for f in ADAPTER.fingerprint(location)] == [root_path, child_path]
    root_path.unlink()
    root.write(sessions, compressed=True)  # Codex compressed it: the listed file is gone
    fingerprint = ADAPTER.fingerprint(location)
    assert not fingerprint or fingerprint[0].path != str(location.where)
    relisted = source.list().sessions[0]
    assert relisted.root is not None and relisted.root.compressed
    assert ADAPTER.fingerprint(relisted)[0].path == str(relisted.where)
    assert source.location("01a2330d-0000-7000-8000-000000000000") == SessionLocation(
        "01a2330d-0000-7000-8000-000000000000", None
    )
