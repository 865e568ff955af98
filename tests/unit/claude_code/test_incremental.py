"""A live transcript only grows: mapping each new line onto the last mapping's cache gives what
mapping the whole file gives, and reads only the new bytes."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from postrun.agents.claude_code import MappingCache, list_sessions, read_from, read_session
from postrun.agents.claude_code.mapping import map_session
from postrun.appendonly import TAIL_BYTES
from postrun.errors import NotParseableYet
from tests.unit.claude_code.kit import (
    CASES,
    GEN_CASES,
    MADE_CASES,
    MAX_BYTES,
    REAL_CASES,
    assert_valid,
    map_location,
    same_mapping,
)


def _kept_versions(case: Path) -> list[tuple[str, Path]]:
    """(path under the projects root, snapshot) of every kept version of a projects file, in order."""
    found = []
    for line in (case / "snapshots" / "index.jsonl").read_text().splitlines():
        entry = json.loads(line)
        name = str(entry["file"])
        if entry["snapshot"] and name.startswith("projects/"):
            found.append((name.removeprefix("projects/"), case / "snapshots" / entry["snapshot"]))
    return found


def _final(case: Path, relative: str) -> Path:
    return case / "claude" / "projects" / relative


class Replay:
    """A projects root written as Claude Code wrote the case's, mapped after every change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: MappingCache | None = None
        self.changes = 0

    def map_and_compare(self, expect_incomplete: str | None = None, *, check_incomplete: bool = True) -> None:
        listing = list_sessions(self.root)
        if not listing.sessions:
            return
        (location,) = listing.sessions
        files = read_session(location, max_bytes=MAX_BYTES, since=read_from(self.cache))
        if b"\n" not in location.transcript.read_bytes():
            with pytest.raises(NotParseableYet, match="transcript file not parseable yet"):
                map_session(files, self.cache)
            return  # a new transcript before its first newline: nothing to store yet
        cached, self.cache = map_session(files, self.cache)
        fresh, _ = map_location(location)
        assert same_mapping(cached, fresh)
        assert_valid(cached)
        if expect_incomplete is not None:
            assert cached.incomplete == (expect_incomplete,)
        elif check_incomplete:
            assert cached.incomplete == ()
        self.changes += 1


@pytest.mark.parametrize("case", REAL_CASES, ids=lambda case: case.name)
def test_every_line_appended_maps_as_the_whole_file_does(case: Path, tmp_path: Path) -> None:
    replay = Replay(tmp_path / "projects")
    for relative, snapshot in _kept_versions(case):
        target = replay.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not relative.endswith(".jsonl"):
            shutil.copyfile(snapshot, target)  # sidecars are replaced whole (tmp + rename)
            replay.map_and_compare()
            continue
        final = _final(case, relative).read_bytes()
        wanted = snapshot.read_bytes()
        assert final.startswith(wanted)  # transcripts only grow
        have = target.read_bytes() if target.exists() else b""
        while len(have) < len(wanted):
            line_end = wanted.index(b"\n", len(have)) + 1
            cut = len(have) + (line_end - len(have)) // 2  # the line caught half written
            with target.open("ab") as out:
                out.write(wanted[len(have) : cut])
            replay.map_and_compare(expect_incomplete=str(target))
            with target.open("ab") as out:
                out.write(wanted[cut:line_end])
            have = wanted[:line_end]
            replay.map_and_compare()
    assert replay.changes > 40


def test_an_append_reads_only_the_new_bytes(tmp_path: Path) -> None:
    case = REAL_CASES[0]
    shutil.copytree(case / "claude" / "projects", tmp_path / "projects")
    (location,) = list_sessions(tmp_path / "projects").sessions
    whole = location.transcript.read_bytes()
    lines = whole.splitlines(keepends=True)
    location.transcript.write_bytes(b"".join(lines[:-3]))
    files = read_session(location, max_bytes=MAX_BYTES)
    assert files.main.start == 0 and len(files.main.data) == len(whole) - sum(map(len, lines[-3:]))
    _, cache = map_session(files)
    for line in lines[-3:]:
        with location.transcript.open("ab") as out:
            out.write(line)
        files = read_session(location, max_bytes=MAX_BYTES, since=read_from(cache))
        assert files.main.start > 0
        assert len(files.main.new) == len(line)
        assert len(files.main.data) <= len(line) + TAIL_BYTES
        assert files.whole == ()  # nothing read whole; the vault's copy is read when it asks
        (copy,) = files.raw
        assert copy.data == location.transcript.read_bytes() and copy.fingerprint == files.main.fingerprint
        mapped, cache = map_session(files, cache)
    fresh, _ = map_location(location)
    assert same_mapping(mapped, fresh)


@pytest.mark.parametrize("change", ["truncated", "rewritten", "replaced"])
def test_a_transcript_that_did_not_only_grow_is_read_again_whole(tmp_path: Path, change: str) -> None:
    case = REAL_CASES[1]
    shutil.copytree(case / "claude" / "projects", tmp_path / "projects")
    (location,) = list_sessions(tmp_path / "projects").sessions
    _, cache = map_location(location)
    data = location.transcript.read_bytes()
    if change == "truncated":
        location.transcript.write_bytes(data[: len(data) // 2 - 7])
    elif change == "rewritten":  # same length, other bytes just before the mark
        assert data.count(b"mock fallback") == 1 and data.rindex(b"mock fallback") > len(data) - TAIL_BYTES
        location.transcript.write_bytes(data.replace(b"mock fallback", b"mock fallbock"))
    else:
        replacement = location.transcript.with_suffix(".new")
        replacement.write_bytes(data)
        os.replace(replacement, location.transcript)
    files = read_session(location, max_bytes=MAX_BYTES, since=read_from(cache))
    assert files.main.start == 0
    mapped, _ = map_session(files, cache)
    fresh, _ = map_location(location)
    assert same_mapping(mapped, fresh)


@pytest.mark.parametrize("case", MADE_CASES + GEN_CASES, ids=lambda case: case.name)
def test_hand_made_transcripts_grown_line_by_line_map_as_whole_files(case: Path, tmp_path: Path) -> None:
    """Every transcript of the case grows a line at a time, in turn (sub-agents too, meta files first)."""
    source = case / "claude" / "projects"
    for listing in list_sessions(source).sessions:
        root = tmp_path / listing.session_id / "projects"
        replay = Replay(root)
        files = sorted(path for path in source.rglob("*.jsonl") if listing.session_id in str(path))
        for meta in source.rglob("*.meta.json"):
            if listing.session_id in str(meta):
                target = root / meta.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(meta, target)
        pending = {path: path.read_bytes().splitlines(keepends=True) for path in files}
        while any(pending.values()):
            for path, lines in pending.items():
                if not lines:
                    continue
                target = root / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("ab") as out:
                    out.write(lines.pop(0))
                replay.map_and_compare(check_incomplete=False)  # a junk line is incomplete while last
        assert replay.changes >= len(files)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "case",
    [path for path in CASES if path.name in ("e_subagents", "subagents_nested")],
    ids=lambda case: case.name,
)
def test_transcripts_growing_in_any_interleaving_map_as_whole_files(case: Path, seed: int, tmp_path: Path) -> None:
    """Sub-agents written while the main agent goes on: new steps land mid-session, seq moves."""
    rng = random.Random(seed)
    source = case / "claude" / "projects"
    root = tmp_path / "projects"
    replay = Replay(root)
    for meta in source.rglob("*.meta.json"):
        target = root / meta.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(meta, target)
    pending = {path: path.read_bytes().splitlines(keepends=True) for path in sorted(source.rglob("*.jsonl"))}
    while any(pending.values()):
        path = rng.choice([path for path, lines in pending.items() if lines])
        target = root / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("ab") as out:
            for _ in range(rng.randint(1, 4)):
                if pending[path]:
                    out.write(pending[path].pop(0))
        replay.map_and_compare(check_incomplete=False)
