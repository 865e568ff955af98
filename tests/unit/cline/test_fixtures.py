"""Golden tests: every fixture case, mapped at the pure level, holds every fact of its expect.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation, list_sessions, map_session, read_session
from postrun.errors import NotParseableYet, SourceError
from tests.unit.cline.kit import CASES, FIXTURES, MAX_BYTES, check_expect, map_case_dir, remap


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.parent.name}/{case.name}")
def test_case_maps_to_valid_records_holding_every_expected_fact(case: Path, tmp_path: Path) -> None:
    mapped, log = map_case_dir(case / "data")
    expected = json.loads((case / "expect.json").read_text())
    assert set(expected.get("sessions", {})) <= set(mapped)
    report = check_expect(case, mapped, log, tmp_path / "export")
    assert report == "", report


def test_half_written_session_is_not_parseable_yet_and_junk_is_skipped() -> None:
    sessions = FIXTURES / "cline" / "mid_write_and_junk" / "data" / "sessions"
    listing = list_sessions(sessions)
    assert [location.session_id for location in listing.sessions] == ["1790000400000_goodd", "1790000400001_halfw"]
    warned = {skipped.path.name: skipped.warn for skipped in listing.skipped}
    assert warned == {".tmp-folder": False, "bad name": True, "notes.txt": True}
    with pytest.raises(NotParseableYet) as caught:
        read_session(listing.sessions[1], max_bytes=MAX_BYTES)
    assert caught.value.kind == "messages"
    assert "messages file not parseable yet (mid-write?)" in str(caught.value)
    assert "1790000400001_halfw" in str(caught.value)


def _snapshot_steps(case: Path) -> list[tuple[dict[str, object], Path]]:
    index = case / "snapshots" / "index.jsonl"
    entries = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    return [(entry, case / "snapshots" / str(entry["snapshot"])) for entry in entries]


APPROVALS = {"kind": "cli", "tool_auto_approve": True, "settings": "missing"}
REAL_CASES = [case for case in CASES if (case / "snapshots" / "index.jsonl").exists()]


@pytest.mark.parametrize("case", REAL_CASES, ids=lambda case: case.name)
def test_replaying_every_live_rewrite_maps_or_is_not_parseable_yet(case: Path, tmp_path: Path) -> None:
    """Each version Cline wrote while the session ran: valid ones map (cache == no cache), torn ones wait."""
    session_id = next((case / "data" / "sessions").iterdir()).name
    location = SessionLocation.in_root(tmp_path / "data" / "sessions", session_id)
    location.folder.mkdir(parents=True)
    cache = None
    replayed = 0
    last_good: dict[str, bytes] = {}
    for entry, snapshot in _snapshot_steps(case):
        folder_name, file_name = str(entry["file"]).split("/")
        assert folder_name == session_id
        target = location.folder / file_name
        shutil.copyfile(snapshot, target)
        if entry["valid_json"]:
            last_good[file_name] = target.read_bytes()
        helper = file_name not in (location.messages.name, location.manifest.name)
        if not location.messages.exists():
            with pytest.raises(SourceError, match="no messages file"):
                read_session(location, max_bytes=MAX_BYTES)
            continue
        if not entry["valid_json"]:
            if helper:  # a torn helper is its own failure: the lead and other helpers still map
                files = read_session(location, max_bytes=MAX_BYTES)
                mapped, _ = map_session(files, APPROVALS)
                assert [problem.where for problem in mapped.unread] == [str(target)]
                assert not any(row.record["actor_id"] == target.name.split(".")[0] for row in mapped.steps)
            else:
                with pytest.raises(NotParseableYet) as caught:
                    read_session(location, max_bytes=MAX_BYTES)
                assert caught.value.kind == ("messages" if target == location.messages else "manifest")
            if file_name in last_good:  # as a reader would keep seeing the last complete version
                target.write_bytes(last_good[file_name])
            else:
                target.unlink()
            continue
        files = read_session(location, max_bytes=MAX_BYTES)
        cache = remap(files, APPROVALS, cache)
        replayed += 1
    assert replayed > 5
