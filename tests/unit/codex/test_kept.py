"""A session parsed back from the vault's copies of its rollouts maps as it did from disk."""

from __future__ import annotations

from pathlib import Path

from postrun.agents.codex import SessionFiles, SessionLocation, list_rollouts, map_session
from postrun.agents.codex.reading import kept_files, read_session
from postrun.errors import SourceError
from postrun.records import StoredActor
from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import MAX_BYTES, same_mapping

SID = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"


def _session(tmp_path: Path) -> tuple[RolloutWriter, RolloutWriter, Path]:
    sessions = tmp_path / ".codex" / "sessions"
    root = RolloutWriter(SID)
    child = RolloutWriter(CHILD, parent=SID, nickname="Dirac", start_ms=root.clock + 100)
    root.begin("t1")
    root.user("u1", "MARK: delegate", "t1")
    root.spawn("s1", "t1", CHILD, "Dirac", "SUB: look")
    child.task_started("ct1", parent_turn="t1", root_turn="t1")
    child.command("cc1", "ls", "ct1", output="x\n")
    root.task_complete("t1")
    return root, child, sessions


def _location(sessions: Path) -> SessionLocation:
    rollouts = {rollout.thread_id: rollout for rollout in list_rollouts(sessions).rollouts}
    return SessionLocation(SID, rollouts[SID], (rollouts[CHILD],))


def test_the_vaults_copies_map_as_the_files_did(tmp_path: Path) -> None:
    root, child, sessions = _session(tmp_path)
    root.write(sessions)
    child.write(sessions, compressed=True)
    files = read_session(_location(sessions), max_bytes=MAX_BYTES)
    copies = files.raw
    assert [copy.name for copy in copies] == [
        f"sessions/{root.folder()}/{root.name()}",
        f"sessions/{child.folder()}/{child.name()}.zst",
    ]
    kept = kept_files(SID, copies, max_bytes=MAX_BYTES)
    assert kept is not None
    assert same_mapping(map_session(kept)[0], map_session(files)[0])
    assert kept_files(CHILD, copies, max_bytes=MAX_BYTES) is None  # a child's copies are no session


def test_a_thread_kept_twice_is_read_from_its_longer_copy(tmp_path: Path) -> None:
    """Copied while it was a plain rollout, copied again once Codex compressed it (with more lines)."""
    root, child, sessions = _session(tmp_path)
    plain = root.write(sessions, lines=len(root.lines) - 1)
    child.write(sessions)
    first = read_session(_location(sessions), max_bytes=MAX_BYTES).raw
    plain.unlink()
    root.write(sessions, compressed=True)
    files = read_session(_location(sessions), max_bytes=MAX_BYTES)
    kept = kept_files(SID, [*first, *files.raw], max_bytes=MAX_BYTES)
    assert kept is not None and kept.root.rollout.compressed
    assert same_mapping(map_session(kept)[0], map_session(files)[0])


def test_a_child_that_cannot_be_read_keeps_its_stored_steps_in_place(tmp_path: Path) -> None:
    root, child, sessions = _session(tmp_path)
    root.write(sessions)
    child_path = child.write(sessions)
    files = read_session(_location(sessions), max_bytes=MAX_BYTES)
    whole, _ = map_session(files)
    stored = StoredActor(
        next(actor for actor in whole.actors if actor["id"] == CHILD),
        tuple(row for row in whole.steps if row.record["actor_id"] == CHILD),
        whole.helper_metrics.get(CHILD),
    )
    problem = SourceError(str(child_path), "cannot read: Permission denied")
    unreadable = SessionFiles(files.location, files.root, (), (problem,))
    mapped, _ = map_session(unreadable, None, {CHILD: stored})
    assert [row.id for row in mapped.steps] == [row.id for row in whole.steps]
    assert [row.record for row in mapped.steps] == [row.record for row in whole.steps]
    assert mapped.actors == whole.actors and mapped.session.get("metrics") == whole.session.get("metrics")
    assert [str(p) for p in mapped.unread] == [str(problem)]
