"""Finding rollouts and the sessions ingest targets name."""

from __future__ import annotations

from pathlib import Path

import pytest

from postrun.agents.codex import list_rollouts, rollout_at, sessions_folder
from postrun.agents.codex.targets import resolve_targets
from postrun.errors import NotFound, UsageError
from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import MAX_BYTES

ROOT = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"
GRANDCHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc3"
DAY_MS = 86_400_000


def _tree(tmp_path: Path) -> Path:
    """A root thread, its sub-agent started the next day, and the sub-agent's own."""
    sessions = tmp_path / ".codex" / "sessions"
    root = RolloutWriter(ROOT)
    root.begin("t1")
    root.write(sessions)
    RolloutWriter(CHILD, parent=ROOT, start_ms=root.start_ms + DAY_MS).write(sessions)
    RolloutWriter(GRANDCHILD, parent=CHILD, session_id=ROOT, depth=2, start_ms=root.start_ms + DAY_MS).write(sessions)
    return sessions


def test_the_sessions_folder_is_postrun_codex_dir_else_codex_home_else_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert sessions_folder({}, home) == home / ".codex" / "sessions"
    assert sessions_folder({"CODEX_HOME": "/opt/codex"}, home) == Path("/opt/codex/sessions")
    both = {"CODEX_HOME": "/opt/codex", "POSTRUN_CODEX_DIR": "/data/rollouts"}
    assert sessions_folder(both, home) == Path("/data/rollouts")


def test_only_rollout_files_are_listed_and_a_thread_found_twice_is_read_where_codex_writes_it(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    day = sessions / "2026" / "12" / "01"
    day.mkdir(parents=True)
    name = f"rollout-2026-12-01T19-20-30-{ROOT}.jsonl"
    (day / name).write_bytes(b"")
    (day / (name + ".zst")).write_bytes(b"")  # being compressed: the plain one is still the live one
    (day / ".hidden.jsonl").write_bytes(b"")
    (day / "_tmp").mkdir()
    (day / "notes.txt").write_bytes(b"")
    (day / f"rollout-2026-12-01T19-20-30-{CHILD}.jsonl.zst.tmp").write_bytes(b"")
    archive = tmp_path / "archived_sessions"
    archive.mkdir()
    (archive / f"rollout-2026-11-30T10-00-00-{CHILD}.jsonl").write_bytes(b"")
    (archive / name).write_bytes(b"")  # archived while the copy in sessions/ is not removed yet
    listing = list_rollouts(sessions)
    assert [(r.thread_id, r.path.relative_to(tmp_path).as_posix()) for r in listing.rollouts] == [
        (ROOT, f"sessions/2026/12/01/{name}"),
        (CHILD, f"archived_sessions/rollout-2026-11-30T10-00-00-{CHILD}.jsonl"),
    ]
    assert listing.rollouts[1].archived and not listing.rollouts[0].compressed
    assert sorted(skipped.path.name for skipped in listing.skipped) == sorted(
        ["notes.txt", f"rollout-2026-12-01T19-20-30-{CHILD}.jsonl.zst.tmp"]
    )
    assert rollout_at(day / (name + ".zst")).compressed  # type: ignore[union-attr]


def test_a_thread_id_names_its_session_with_every_child_whatever_its_day(tmp_path: Path) -> None:
    sessions = _tree(tmp_path)
    found = resolve_targets([ROOT], sessions, max_bytes=MAX_BYTES)
    assert [session.session_id for session in found.sessions] == [ROOT]
    assert sorted(child.thread_id for child in found.sessions[0].children) == [CHILD, GRANDCHILD]
    assert found.failures == () and found.notes == ()


@pytest.mark.parametrize("target", ["child-file", "grandchild-id"])
def test_a_child_rollout_given_alone_ingests_its_parents_session_and_says_so(tmp_path: Path, target: str) -> None:
    sessions = _tree(tmp_path)
    child_file = next(sessions.rglob(f"*{CHILD}.jsonl"))
    found = resolve_targets([str(child_file) if target == "child-file" else GRANDCHILD], sessions, max_bytes=MAX_BYTES)
    assert [session.session_id for session in found.sessions] == [ROOT]
    assert len(found.notes) == 1 and f"a sub-agent rollout of session {ROOT}: ingesting that session" in found.notes[0]


def test_day_folders_roots_and_files_resolve_in_order_without_duplicates(tmp_path: Path) -> None:
    sessions = _tree(tmp_path)
    root_file = next(sessions.rglob(f"*{ROOT}.jsonl"))
    found = resolve_targets([str(root_file.parent), str(sessions), ROOT, str(root_file)], sessions, max_bytes=MAX_BYTES)
    assert [session.session_id for session in found.sessions] == [ROOT]
    next_day = next(sessions.rglob(f"*{CHILD}.jsonl")).parent
    assert [s.session_id for s in resolve_targets([str(next_day)], sessions, max_bytes=MAX_BYTES).sessions] == [ROOT]


def test_a_target_naming_nothing_fails_alone(tmp_path: Path) -> None:
    sessions = _tree(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    found = resolve_targets(
        [
            "01a2330d-0000-7000-8000-000000000000",
            str(tmp_path / "notes.txt"),
            "not an id",
            ROOT,
            str(tmp_path / "gone/x"),
        ],
        sessions,
        max_bytes=MAX_BYTES,
    )
    assert [session.session_id for session in found.sessions] == [ROOT]
    kinds = [type(failure) for failure in found.failures]
    assert kinds == [NotFound, UsageError, UsageError, NotFound]
    assert "no rollout of that thread" in str(found.failures[0])


def test_an_unreadable_rollout_is_one_failure_of_the_folder_named_and_none_of_a_thread(tmp_path: Path) -> None:
    sessions = _tree(tmp_path)
    day = next(sessions.rglob(f"*{ROOT}.jsonl")).parent
    junk = day / "rollout-2026-12-02T10-00-00-0badbad0-0000-7000-8000-000000000003.jsonl"
    junk.write_bytes(b"hello\nworld\n")  # its first line is written, and is no session_meta
    whole = resolve_targets([str(sessions), str(day)], sessions, max_bytes=MAX_BYTES)
    assert [session.session_id for session in whole.sessions] == [ROOT]  # not a session of its own
    assert [str(failure) for failure in whole.failures] == [
        f"{junk}: not a Codex rollout: its first line is not a session_meta record"
    ]
    # A thread, its rollout, another day: the junk beside them is not theirs to report.
    for target in (
        ROOT,
        str(next(sessions.rglob(f"*{ROOT}.jsonl"))),
        str(next(sessions.rglob(f"*{CHILD}.jsonl")).parent),
    ):
        found = resolve_targets([target], sessions, max_bytes=MAX_BYTES)
        assert [s.session_id for s in found.sessions] == [ROOT] and found.failures == (), target


def test_a_day_folder_symlinked_out_of_the_sessions_folder_is_said_not_silently_skipped(tmp_path: Path) -> None:
    """A symlinked folder is not walked, as a rollout's symlink is not followed out of its
    folder: one leading outside holds rollouts never read, and is named; one leading inside
    names a folder listed anyway, and its rollouts are found once."""
    sessions = _tree(tmp_path)
    (day,) = {path.parent for path in sessions.rglob("rollout-*.jsonl") if CHILD in path.name}
    moved = tmp_path / "elsewhere" / day.name
    moved.parent.mkdir()
    day.rename(moved)
    day.symlink_to(moved)
    (root_day,) = {path.parent for path in sessions.rglob("rollout-*.jsonl") if ROOT in path.name}
    (sessions / "latest").symlink_to(root_day)
    listing = list_rollouts(sessions)
    assert [rollout.thread_id for rollout in listing.rollouts] == [ROOT]
    assert [(entry.path, entry.warn) for entry in listing.skipped] == [(day, True)]
    assert "leads outside its sessions folder" in listing.skipped[0].reason
