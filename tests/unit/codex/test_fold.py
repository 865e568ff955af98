"""The fold resumes: a rollout that grew costs its new bytes, and the result is a fresh mapping's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from postrun.agents.codex import (
    Rollout,
    RolloutData,
    SessionFiles,
    SessionLocation,
    map_session,
    read_rollout,
    rollout_at,
)
from postrun.agents.codex import placing as placing_module
from postrun.agents.codex.reading import read_session
from postrun.appendonly import TAIL_BYTES, Appended
from postrun.errors import NotParseableYet, SourceError
from postrun.records import StepRow
from tests.support.codex_rollouts import RolloutWriter, delegating
from tests.unit.codex.kit import MAX_BYTES, assert_valid, remap, same_mapping

SID = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"


def _session(tmp_path: Path, *writers: RolloutWriter) -> SessionLocation:
    paths = [writer.write(tmp_path / "sessions") for writer in writers]
    rollouts = [rollout for path in paths if (rollout := rollout_at(path)) is not None]
    return SessionLocation(SID, rollouts[0], tuple(rollouts[1:]))


def _busy_root(commands: int) -> RolloutWriter:
    root = RolloutWriter(SID)
    root.begin("t1")
    root.user("u1", "MARK: work", "t1")
    for number in range(commands):
        root.command(f"c{number}", f"echo {number}", "t1", output=f"{number}\n" * 50)
        root.tokens(f"r{number}", "t1", input_tokens=100, output=5)
    return root


class _CountingRow(StepRow):
    built = 0

    @classmethod
    def build(cls, record: dict[str, Any]) -> StepRow:
        _CountingRow.built += 1
        return StepRow.build(record)


def test_one_appended_line_reads_its_bytes_and_builds_only_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _busy_root(300)
    location = _session(tmp_path, root)
    first, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    size = location.root.path.stat().st_size  # type: ignore[union-attr]
    root.agent("m1", "All done.", "t1")
    location = _session(tmp_path, root)
    files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
    appended = location.root.path.stat().st_size - size  # type: ignore[union-attr]
    assert files.root.read.start == size and len(files.root.read.new) == appended
    assert len(files.root.read.data) <= appended + TAIL_BYTES  # the new line, and the bytes checked before it
    monkeypatch.setattr(placing_module, "StepRow", _CountingRow)
    _CountingRow.built = 0
    grown, _ = map_session(files, cache)
    assert _CountingRow.built == 1
    assert len(grown.steps) == len(first.steps) + 1
    assert grown.steps[: len(first.steps)] == first.steps  # the same rows, not rebuilt
    fresh, _ = map_session(read_session(location, max_bytes=MAX_BYTES))
    assert same_mapping(grown, fresh)


def test_an_item_replaces_its_pending_call_in_place(tmp_path: Path) -> None:
    root = RolloutWriter(SID)
    root.begin("t1")
    root.user("u1", "MARK: run", "t1")
    root.call("c1", "exec_command", {"cmd": "make"}, "t1")
    location = _session(tmp_path, root)
    pending, cache = remap(
        read_session(location, max_bytes=MAX_BYTES), read_session(location, max_bytes=MAX_BYTES), None
    )
    step = {row.id: row.record for row in pending.steps}["c1"]
    assert (step["outcome"], step["content_status"], step["seq"]) == ("pending", "reference_only", 1)
    root.item(
        "t1",
        {
            "type": "CommandExecution",
            "id": "c1",
            "command": ["/bin/bash", "-lc", "make"],
            "status": "completed",
            "aggregated_output": "ok\n",
            "exit_code": 0,
        },
    )
    location = _session(tmp_path, root)
    done, _ = remap(
        read_session(location, max_bytes=MAX_BYTES, cache=cache), read_session(location, max_bytes=MAX_BYTES), cache
    )
    step = {row.id: row.record for row in done.steps}["c1"]
    assert (step["outcome"], step["content_status"], step["seq"], step["payload"]["stdout"]) == (
        "ok",
        "inline",
        1,
        "ok\n",
    )
    assert len(done.steps) == len(pending.steps)


def test_an_earlier_cache_stays_valid_after_a_later_mapping(tmp_path: Path) -> None:
    """A store write rolled back maps again from the cache it started from."""
    root = _busy_root(3)
    location = _session(tmp_path, root)
    _, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    root.agent("m1", "Done.", "t1")
    location = _session(tmp_path, root)
    once, _ = map_session(read_session(location, max_bytes=MAX_BYTES, cache=cache), cache)
    again, _ = map_session(read_session(location, max_bytes=MAX_BYTES, cache=cache), cache)
    assert same_mapping(once, again)


def test_a_rewritten_rollout_is_read_again_from_its_first_byte(tmp_path: Path) -> None:
    root = _busy_root(3)
    location = _session(tmp_path, root)
    _, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    other = _busy_root(4)  # as long up to where the fold stopped, other bytes just before it
    last = len(root.lines) - 1
    other.lines[last] = {**other.lines[last], "timestamp": "2026-12-01T19:59:59.999Z"}
    assert len(other.data(last + 1)) == len(root.data())
    location = _session(tmp_path, other)
    files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
    assert files.root.read.start == 0
    remapped, _ = map_session(files, cache)
    assert same_mapping(remapped, map_session(read_session(location, max_bytes=MAX_BYTES))[0])


def test_a_rollout_compressed_in_place_continues_the_same_fold(tmp_path: Path) -> None:
    root = _busy_root(3)
    plain = root.write(tmp_path / "sessions")
    location = SessionLocation(SID, rollout_at(plain))
    before, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    plain.unlink()
    root.agent("m1", "Done.", "t1")  # and one more line, compressed with the rest
    packed = root.write(tmp_path / "sessions", compressed=True)
    rollout = rollout_at(packed)
    assert rollout is not None and rollout.compressed and rollout.thread_id == SID
    files = read_session(SessionLocation(SID, rollout), max_bytes=MAX_BYTES, cache=cache)
    mark = cache.mark_of(SID)
    assert mark is not None and files.root.read.start == mark.end > 0
    assert files.root.raw == packed.read_bytes()  # the vault keeps the file as it is on disk
    after, _ = map_session(files, cache)
    assert [row.blob for row in after.steps[: len(before.steps)]] == [row.blob for row in before.steps]
    assert len(after.steps) == len(before.steps) + 1


def test_a_child_rollout_waits_for_its_parent_and_then_joins_its_session(tmp_path: Path) -> None:
    root, child = delegating(SID, CHILD)
    alone = rollout_at(child.write(tmp_path / "sessions"))
    with pytest.raises(SourceError, match="whose own rollout is not there yet"):
        read_session(SessionLocation(SID, None, (alone,)), max_bytes=MAX_BYTES)  # type: ignore[arg-type]
    location = _session(tmp_path, root, child)
    mapped, _ = map_session(read_session(location, max_bytes=MAX_BYTES))
    assert_valid(mapped)
    ids = [row.id for row in mapped.steps]
    assert ids == ["u1", "s1", f"{CHILD}/cu1", f"{CHILD}/cc1"]
    assert [actor["id"] for actor in mapped.actors] == ["root", CHILD]
    assert mapped.actors[1] == {"id": CHILD, "type": "subagent", "parent_id": "root", "label": "Dirac"}
    assert mapped.steps[1].record["payload"]["raw"]["actor_id"] == CHILD


def test_a_child_read_before_its_parents_spawn_step_moves_behind_it(tmp_path: Path) -> None:
    root = RolloutWriter(SID)
    child = RolloutWriter(CHILD, parent=SID, nickname="Dirac", start_ms=root.clock + 100)
    root.begin("t1")
    root.user("u1", "MARK: delegate", "t1")
    child.task_started("ct1")  # no turn of the root named: placed by its spawn step
    child.user("cu1", "SUB: look", "ct1")
    location = _session(tmp_path, root, child)
    early, cache = remap(read_session(location, max_bytes=MAX_BYTES), read_session(location, max_bytes=MAX_BYTES), None)
    assert [row.id for row in early.steps] == ["u1", f"{CHILD}/cu1"]
    root.spawn("s1", "t1", CHILD, "Dirac", "SUB: look")
    root.agent("m1", "Waiting.", "t1")
    location = _session(tmp_path, root, child)
    later, _ = remap(
        read_session(location, max_bytes=MAX_BYTES, cache=cache), read_session(location, max_bytes=MAX_BYTES), cache
    )
    assert [row.id for row in later.steps] == ["u1", "s1", f"{CHILD}/cu1", "m1"]
    assert {row.record["turn_id"] for row in later.steps} == {"t1"}


def test_every_byte_prefix_maps_its_complete_lines_or_waits(tmp_path: Path) -> None:
    """Torn writes: a rollout caught at any byte maps what its complete lines say."""
    root = RolloutWriter(SID)
    root.begin("t1")
    root.user("u1", "MARK: é and ✓", "t1")
    root.command("c1", "printf 'ü'", "t1", output="ü")
    root.task_complete("t1")
    data = root.data()
    path = tmp_path / "sessions" / root.folder() / root.name()
    path.parent.mkdir(parents=True)
    rollout = Rollout(SID, path)
    location = SessionLocation(SID, rollout)
    cache = None
    for end in range(len(data) + 1):
        path.write_bytes(data[:end])
        complete = data[: data.rfind(b"\n", 0, end) + 1]
        try:
            files = SessionFiles(
                location, read_rollout(rollout, max_bytes=MAX_BYTES, mark=cache.mark_of(SID) if cache else None)
            )
            mapped, cache = map_session(files, cache)
        except NotParseableYet:
            assert b"\n" not in data[:end]
            continue
        whole = RolloutData(rollout, Appended.whole(complete, files.root.read.fingerprint))
        expected, _ = map_session(SessionFiles(location, whole))
        assert same_mapping(mapped, expected), end


def _delegating(tmp_path: Path) -> tuple[RolloutWriter, SessionLocation]:
    root, child = delegating(SID, CHILD)
    return root, _session(tmp_path, root, child)


def test_a_rollout_unchanged_since_its_fold_is_not_opened_again(tmp_path: Path) -> None:
    root, location = _delegating(tmp_path)
    _, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    root.agent("m1", "Waiting.", "t1")
    root.write(tmp_path / "sessions")  # the child's rollout is left as it was
    files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
    (unchanged,) = files.children
    # Its fingerprint is the one its fold was read at: not a byte read, the fold's mark kept.
    assert unchanged.read.data == b"" and unchanged.read.kept == cache.mark_of(CHILD)
    assert len(files.root.read.new) > 0
    grown, _ = map_session(files, cache)
    fresh, _ = map_session(read_session(location, max_bytes=MAX_BYTES))
    assert same_mapping(grown, fresh)
    # Touched (another mtime, the same bytes): read from its mark again, its fold unchanged.
    stamp = location.children[0].path.stat().st_mtime_ns + 1_000_000
    os.utime(location.children[0].path, ns=(stamp, stamp))
    touched = read_session(location, max_bytes=MAX_BYTES, cache=cache).children[0]
    assert touched.read.kept is None and touched.read.start == cache.mark_of(CHILD).end  # type: ignore[union-attr]


def test_the_turns_a_line_left_as_they_were_are_the_very_same_records(tmp_path: Path) -> None:
    root = _busy_root(3)
    for turn in ("t2", "t3"):
        root.begin(turn, first=False)
        root.user(f"u-{turn}", f"MARK: {turn}", turn)
        root.command(f"c-{turn}", "true", turn, output="")
    location = _session(tmp_path, root)
    first, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    root.agent("m3", "Done with t3.", "t3")
    location = _session(tmp_path, root)
    grown, _ = map_session(read_session(location, max_bytes=MAX_BYTES, cache=cache), cache)
    assert [turn["id"] for turn in grown.turns] == ["t1", "t2", "t3"]
    assert all(now is before for now, before in zip(grown.turns[:2], first.turns[:2], strict=True))
    assert grown.turns[2] is not first.turns[2] and grown.turns[2]["step_ids"][-1] == "m3"
    fresh, _ = map_session(read_session(location, max_bytes=MAX_BYTES))
    assert same_mapping(grown, fresh)


def test_a_line_after_the_last_child_started_is_ordered_without_ordering_the_session_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, location = _delegating(tmp_path)
    root.agent("m1", "Waiting.", "t1")
    root.write(tmp_path / "sessions")
    _, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    emitted: list[str] = []
    real = placing_module._emit

    def counting(thread: Any, *args: Any) -> tuple[int, int, int]:
        emitted.append(thread.facts.actor_id)
        return real(thread, *args)

    monkeypatch.setattr(placing_module, "_emit", counting)
    root.agent("m2", "Still waiting.", "t1")
    root.write(tmp_path / "sessions")
    grown, cache = map_session(read_session(location, max_bytes=MAX_BYTES, cache=cache), cache)
    assert emitted == []  # the order up to the new step is the last one's
    assert [row.id for row in grown.steps][-3:] == [f"{CHILD}/cc1", "m1", "m2"]
    assert same_mapping(grown, map_session(read_session(location, max_bytes=MAX_BYTES))[0])
    # A line that starts no child but changes an entry before the last one that did: ordered again.
    root.output("s1", {"agent_id": CHILD, "nickname": "Dirac"}, "t1")
    root.write(tmp_path / "sessions")
    again, _ = map_session(read_session(location, max_bytes=MAX_BYTES, cache=cache), cache)
    assert emitted
    assert same_mapping(again, map_session(read_session(location, max_bytes=MAX_BYTES))[0])


def test_an_unchanged_rollout_caught_mid_line_is_still_read_on_from_its_mark(tmp_path: Path) -> None:
    root, location = _delegating(tmp_path)
    child_path = location.children[0].path
    with child_path.open("ab") as out:
        out.write(b'{"timestamp":"2026-12-01T19:21:00.000Z","type":"event_msg","pay')  # Codex mid-write
    _, cache = map_session(read_session(location, max_bytes=MAX_BYTES))
    root.agent("m1", "Waiting.", "t1")
    root.write(tmp_path / "sessions")
    files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
    (torn,) = files.children
    assert torn.read.kept is None and torn.read.start == cache.mark_of(CHILD).end  # type: ignore[union-attr]
    grown, _ = map_session(files, cache)
    assert str(child_path) in grown.incomplete
    (copy,) = [raw for raw in files.raw if raw.fingerprint.path == str(child_path)]
    assert copy.data == child_path.read_bytes()  # the whole file, its torn line included
