"""Replaying each real case as Codex wrote it: every version seen, and lines cut mid-write.

Each version maps from the last one's cache to what a fresh mapping of the whole files
gives; a line not complete yet is left for the next read and never changes stored steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from postrun.agents.codex import MappingCache, group_sessions, list_rollouts
from postrun.agents.codex.reading import read_metas, read_session
from postrun.records import MappedSession
from tests.unit.codex.kit import MAX_BYTES, REAL_CASES, map_sessions_dir, remap, same_mapping


def _versions(case: Path) -> list[tuple[str, int]]:
    """(file, size) of every version seen: each one a prefix of the final file."""
    index = case / "snapshots" / "index.jsonl"
    entries = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    assert all(entry["prefix_of_final"] for entry in entries)
    return [(str(entry["file"]), int(entry["size"])) for entry in entries]


def _map_live(sessions: Path, caches: dict[str, MappingCache]) -> dict[str, MappedSession]:
    listing = list_rollouts(sessions)
    metas, _ = read_metas(listing.rollouts, max_bytes=MAX_BYTES)
    mapped: dict[str, MappedSession] = {}
    for location in group_sessions(listing.rollouts, metas):
        if location.root is None:
            continue  # a child whose parent is not written yet: no session
        cache = caches.get(location.session_id)
        files = read_session(location, max_bytes=MAX_BYTES, cache=cache)
        full = read_session(location, max_bytes=MAX_BYTES)
        if cache is not None:
            # Only what was added is read: every rollout from where its fold stopped.
            for part in (files.root, *files.children):
                mark = cache.mark_of(part.rollout.thread_id)
                assert part.read.start == (mark.end if mark is not None else 0)
        try:
            mapped[location.session_id], caches[location.session_id] = remap(files, full, cache)
        except Exception as exc:
            if "first line is not complete yet" in str(exc):
                continue
            raise
    return mapped


@pytest.mark.parametrize("case", REAL_CASES, ids=lambda case: case.name)
def test_every_version_maps_from_the_last_ones_cache_as_a_fresh_mapping_does(case: Path, tmp_path: Path) -> None:
    final = {path.relative_to(case).as_posix(): path.read_bytes() for path in (case / "sessions").rglob("*.jsonl")}
    caches: dict[str, MappingCache] = {}
    step_counts: list[int] = []
    cuts_seen = 0
    for file, size in _versions(case):
        target = tmp_path / file
        target.parent.mkdir(parents=True, exist_ok=True)
        content = final[file][:size]
        # Cut the next line in its middle first: it is left for the next read.
        following = final[file][size : final[file].find(b"\n", size) + 1]
        if following:
            target.write_bytes(content + following[: len(following) // 2])
            cut = _map_live(tmp_path / "sessions", caches)
            # The cut line is left for the next read, and the file is said to be mid-write.
            holding = [s for s in cut.values() if any(str(target) in seg["source_files"] for seg in s.segments)]
            assert all(str(target) in session.incomplete for session in holding)
            cuts_seen += len(holding)
        target.write_bytes(content)
        mapped = _map_live(tmp_path / "sessions", caches)
        step_counts.append(sum(len(session.steps) for session in mapped.values()))
    assert step_counts == sorted(step_counts)  # appends only add steps
    assert cuts_seen > 0
    for file, content in final.items():
        assert (tmp_path / file).read_bytes() == content
    live = _map_live(tmp_path / "sessions", caches)
    one_shot, _ = map_sessions_dir(tmp_path / "sessions")
    assert set(live) == set(one_shot) and live
    for session_id, session in one_shot.items():
        assert same_mapping(live[session_id], session)
