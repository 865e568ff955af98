"""Reading a session's files: the lead transcript, its manifest and its helpers' transcripts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation, read_session, session_fingerprint
from postrun.errors import NotParseableYet, SourceError
from postrun.jsonio import stat_fingerprint
from tests.unit.cline.kit import FIXTURES, MAX_BYTES


@pytest.fixture
def subagents(tmp_path: Path) -> SessionLocation:
    """A copy of the real session whose folder also holds two subagent transcripts."""
    source = FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions"
    shutil.copytree(source, tmp_path / "sessions")
    return SessionLocation.in_root(tmp_path / "sessions", "1795976749765_vx695")


HELPERS = ("agent_1795976750621_u6sv2j", "agent_1795976750622_zikz6r")


def _helper_path(location: SessionLocation, name: str) -> Path:
    return location.folder / f"{name}.messages.json"


def test_reads_the_lead_transcript_manifest_and_helpers(subagents: SessionLocation) -> None:
    files = read_session(subagents, max_bytes=MAX_BYTES)
    assert files.location == subagents
    assert files.messages["agent"] == "lead"
    assert files.manifest is not None and files.manifest["session_id"] == "1795976749765_vx695"
    assert [side.name for side in files.helpers] == list(HELPERS)
    assert all(side.document["agent"] == "subagent" and side.error is None for side in files.helpers)
    assert files.compaction is None
    assert [source.path for source in files.source_files] == [
        str(subagents.messages),
        str(subagents.manifest),
        *(str(_helper_path(subagents, name)) for name in HELPERS),
    ]
    assert files.source_files == session_fingerprint(subagents)
    assert files.client_source == "cli"


def test_a_torn_helper_is_its_own_failure(subagents: SessionLocation) -> None:
    torn = _helper_path(subagents, HELPERS[0])
    torn.write_text('{"agent": "subagent", "messages": [{"id": "m1", "ro')
    files = read_session(subagents, max_bytes=MAX_BYTES)
    failed, fine = files.helpers
    assert isinstance(failed.error, NotParseableYet) and failed.error.where == str(torn)
    assert failed.document is None and fine.error is None
    assert str(torn) not in [source.path for source in files.source_files]
    assert str(torn) in [source.path for source in session_fingerprint(subagents)]  # changes still noticed


def test_temp_hidden_and_unsafe_side_files_are_not_helpers(subagents: SessionLocation) -> None:
    for name in (".x.messages.json", "_y.messages.json", "z.messages.json.123.tmp", "bad name.messages.json"):
        (subagents.folder / name).write_text("{}")
    (subagents.folder / "dir.messages.json").mkdir()
    files = read_session(subagents, max_bytes=MAX_BYTES)
    assert [side.name for side in files.helpers] == list(HELPERS)


def test_fingerprints_are_taken_before_the_read(subagents: SessionLocation) -> None:
    before = stat_fingerprint(subagents.messages)
    files = read_session(subagents, max_bytes=MAX_BYTES)
    assert files.source_files[0] == before
    subagents.messages.write_text('{"messages": []}')
    os.utime(subagents.messages, ns=(1, 1))
    assert session_fingerprint(subagents)[0] != files.source_files[0]


def test_manifest_is_optional(subagents: SessionLocation) -> None:
    subagents.manifest.unlink()
    files = read_session(subagents, max_bytes=MAX_BYTES)
    assert files.manifest is None
    assert str(subagents.manifest) not in [source.path for source in files.source_files]
    assert session_fingerprint(subagents) == files.source_files
    assert files.client_source == "cli"  # from the transcript's origin


def test_missing_messages_file_is_a_source_error(subagents: SessionLocation) -> None:
    subagents.messages.unlink()
    with pytest.raises(SourceError, match="no messages file") as caught:
        read_session(subagents, max_bytes=MAX_BYTES)
    assert not isinstance(caught.value, NotParseableYet)


def test_half_written_manifest_is_not_parseable_yet(subagents: SessionLocation) -> None:
    subagents.manifest.write_text('{"session_id": "1795976749765_vx695", "sta')
    with pytest.raises(NotParseableYet) as caught:
        read_session(subagents, max_bytes=MAX_BYTES)
    assert caught.value.kind == "manifest"
    assert "manifest file not parseable yet (mid-write?)" in str(caught.value)


def test_manifest_that_is_not_an_object_has_the_wrong_shape(subagents: SessionLocation) -> None:
    subagents.manifest.write_text("[1, 2]")
    with pytest.raises(SourceError, match="wrong shape") as caught:
        read_session(subagents, max_bytes=MAX_BYTES)
    assert caught.value.where == str(subagents.manifest)


def test_fifo_in_place_of_the_transcript_is_refused(subagents: SessionLocation) -> None:
    subagents.messages.unlink()
    os.mkfifo(subagents.messages)
    with pytest.raises(SourceError, match=r"not a regular file \(fifo\)"):
        read_session(subagents, max_bytes=MAX_BYTES)


def test_size_limit_applies(subagents: SessionLocation) -> None:
    with pytest.raises(SourceError, match="max_file_mb"):
        read_session(subagents, max_bytes=1000)


def test_a_compaction_sidecar_is_fingerprinted_once_it_is_there(subagents: SessionLocation) -> None:
    assert str(subagents.compaction) not in [source.path for source in session_fingerprint(subagents)]
    subagents.compaction.write_text('{"summary": "so far"}')
    fingerprints = session_fingerprint(subagents)
    assert fingerprints[-1] == stat_fingerprint(subagents.compaction)
    assert [source.path for source in read_session(subagents, max_bytes=MAX_BYTES).source_files] == [
        source.path for source in fingerprints
    ]
