"""Where sessions are, which names are used, and what is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation, list_sessions, resolve_targets, session_id_for_event
from postrun.agents.cline.locate import helper_transcripts, is_safe_name, leads_outside
from postrun.errors import NotFound, SourceError, UsageError


def make_session(root: Path, session_id: str, *, manifest: bool = True, messages: bool = True) -> SessionLocation:
    location = SessionLocation.in_root(root, session_id)
    location.folder.mkdir(parents=True, exist_ok=True)
    if messages:
        location.messages.write_text('{"messages": []}')
    if manifest:
        location.manifest.write_text("{}")
    return location


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("1788291234567_k3p9z", True),
        ("a.b-c_d", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("", False),
        (".", False),
        ("..", False),
        ("bad name", False),
        ("a/b", False),
        ("caf\u00e9", False),
    ],
)
def test_safe_names(name: str, safe: bool) -> None:
    assert is_safe_name(name) is safe


def test_location_of_a_session() -> None:
    location = SessionLocation.in_root(Path("/d/sessions"), "s1")
    assert location.folder == Path("/d/sessions/s1")
    assert location.messages == Path("/d/sessions/s1/s1.messages.json")
    assert location.manifest == Path("/d/sessions/s1/s1.json")
    assert location.data_dir == Path("/d")


def test_list_sessions_skips_bookkeeping_silently_and_junk_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    make_session(root, "1_good")
    make_session(root, "2_no_manifest", manifest=False)
    make_session(root, "3_starting", messages=False)  # manifest written first: not a session yet
    (root / "4_empty").mkdir()
    make_session(root, ".hidden")
    make_session(root, "_private")
    (root / "x.json.tmp").write_text("")
    (root / "sessions.index.json").write_text("{}")
    (root / "machine-id").write_text("cl-1")
    (root / "notes.txt").write_text("not a session")
    (root / "5_file").write_text("a file where a session folder should be")
    make_session(root, "bad name")
    make_session(root, "6_root__agent_7", manifest=False)  # an early build's subagent folder
    outside = make_session(tmp_path / "elsewhere", "7_outside")
    (root / "7_outside").symlink_to(outside.folder)
    (root / "8_broken").symlink_to(tmp_path / "missing")
    root_link = tmp_path / "root-link"
    root_link.symlink_to(root)

    listing = list_sessions(root)

    assert [location.session_id for location in listing.sessions] == ["1_good", "2_no_manifest"]
    assert listing.sessions[0] == SessionLocation.in_root(root, "1_good")
    skipped = {entry.path.name: entry.warn for entry in listing.skipped}
    assert skipped == {
        "3_starting": False,
        "4_empty": True,
        ".hidden": False,
        "_private": False,
        "x.json.tmp": False,
        "sessions.index.json": False,
        "machine-id": False,
        "notes.txt": True,
        "5_file": True,
        "bad name": True,
        "6_root__agent_7": False,
        "7_outside": True,
        "8_broken": True,
    }
    assert all(entry.reason for entry in listing.skipped)
    # A root reached through a symlink lists the same sessions, under the path given.
    assert [location.folder for location in list_sessions(root_link).sessions] == [
        root_link / "1_good",
        root_link / "2_no_manifest",
    ]


def test_symlinked_session_inside_the_root_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    real = make_session(root / "archive", "s1")
    (root / "s1").symlink_to(real.folder)
    listing = list_sessions(root)
    assert [location.session_id for location in listing.sessions] == ["s1"]


def test_list_sessions_of_a_missing_or_file_root(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        list_sessions(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(SourceError, match="not a folder"):
        list_sessions(tmp_path / "file")


def test_resolve_session_folder_messages_file_and_sessions_root(tmp_path: Path) -> None:
    root = tmp_path / "data" / "sessions"
    one = make_session(root, "s1")
    two = make_session(root, "s2")
    subagent = one.folder / "agent_1.messages.json"
    subagent.write_text("{}")
    listing = resolve_targets(
        [str(one.folder), str(two.messages), str(root), subagent], default_root=tmp_path / "default"
    )
    assert listing.sessions == (one, two)  # the helper's file is its lead's session
    assert listing.notes == (f"{subagent}: a helper transcript of session s1: ingesting that session",)


def test_a_helper_file_alone_names_its_lead_session(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    lead = make_session(root, "s1")
    helper = lead.folder / "reviewer__Z2skp8.messages.json"
    helper.write_text("{}")
    listing = resolve_targets([str(helper)], default_root=tmp_path / "default")
    assert listing.sessions == (lead,) and len(listing.notes) == 1
    lead.messages.unlink()  # no lead transcript: the file is taken as given
    listing = resolve_targets([str(helper)], default_root=tmp_path / "default")
    assert [location.session_id for location in listing.sessions] == ["reviewer__Z2skp8"] and not listing.notes


def test_helper_transcripts_beside_the_lead(tmp_path: Path) -> None:
    lead = make_session(tmp_path / "sessions", "s1")
    for name in ("agent_1.messages.json", "t__x.messages.json", "s1.compaction.json", "a.messages.json.1.tmp"):
        (lead.folder / name).write_text("{}")
    assert helper_transcripts(lead) == (
        ("agent_1", lead.folder / "agent_1.messages.json"),
        ("t__x", lead.folder / "t__x.messages.json"),
    )
    assert helper_transcripts(SessionLocation.in_root(tmp_path / "sessions", "missing")) == ()


def test_resolve_relative_paths_and_existing_path_wins_over_an_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default_root = tmp_path / "home" / "sessions"
    make_session(default_root, "s1")
    work = tmp_path / "work"
    local = make_session(work / "s1", "s1")  # ./s1 is a sessions folder here
    monkeypatch.chdir(work)
    assert resolve_targets(["s1"], default_root).sessions == (local,)
    assert resolve_targets(["s1/s1/s1.messages.json"], default_root).sessions == (local,)


def test_resolve_bare_ids_in_the_default_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    default_root = tmp_path / "sessions"
    found = make_session(default_root, "1790_abcde")
    assert resolve_targets(["1790_abcde"], default_root).sessions == (found,)
    [missing] = resolve_targets(["1790_zzzzz"], default_root).failures
    assert isinstance(missing, NotFound)
    assert str(default_root) in str(missing)
    assert "pass the session folder or messages file" in str(missing)


def test_resolve_rejects_unsafe_ids_and_other_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    default_root = tmp_path / "sessions"
    (tmp_path / "notes.txt").write_text("")
    unsafe = make_session(tmp_path / "elsewhere", "bad name")
    good = make_session(default_root, "s1")
    listing = resolve_targets(["bad id!", "no/such/path", "notes.txt", str(unsafe.folder), "s1", ""], default_root)
    assert listing.sessions == (good,)  # one bad target does not cancel the others
    kinds = [type(failure) for failure in listing.failures]
    assert kinds == [UsageError, NotFound, UsageError, UsageError, UsageError]
    assert "unsafe session id" in str(listing.failures[3])
    assert str(listing.failures[4]).startswith("'':")


def test_a_target_with_control_characters_is_shown_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    [failure] = resolve_targets(["evil\x1b[31m\nname"], tmp_path / "sessions").failures
    assert "\x1b" not in str(failure) and "\n" not in str(failure)
    assert str(failure).startswith("evil\\x1b[31m\\x0aname:")


def test_resolve_lists_each_session_once(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    one = make_session(root, "s1")
    (root / "junk.txt").write_text("")
    listing = resolve_targets([str(root), str(one.folder), str(one.messages)], default_root=root)
    assert listing.sessions == (one,)
    assert [entry.path.name for entry in listing.skipped] == ["junk.txt"]


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("s1/s1.messages.json", "s1"),
        ("s1/s1.json", "s1"),
        ("s1", "s1"),
        ("s1/agent_1.messages.json", "s1"),
        ("s1/s1.compaction.json", "s1"),
        ("s1/s1.compaction.json.123.abc.tmp", None),
        ("s1.tmp", None),
        (".hidden/x.json", None),
        ("_private/x.json", None),
        ("bad name/bad name.messages.json", None),
        ("sessions.index.json", None),
        ("sessions.index.json.tmp", None),
        ("machine-id", None),
        ("sessions.db-wal", None),
        ("", None),
        ("../other/s1.json", None),
    ],
)
def test_session_id_for_event(relative: str, expected: str | None) -> None:
    root = Path("/data/sessions")
    assert session_id_for_event(root, os.path.join(root, relative) if relative else root) == expected


def test_session_id_for_event_outside_the_root() -> None:
    assert session_id_for_event(Path("/data/sessions"), "/elsewhere/s1/s1.json") is None
    assert session_id_for_event(Path("/data/sessions"), Path("/data/sessions-old/s1/s1.json")) is None


def test_leads_outside_follows_a_symlinked_file_folder_or_root(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    inside = make_session(root, "s1")
    outside = make_session(tmp_path / "elsewhere", "s2")
    (root / "s3").mkdir()
    (root / "s3" / "file").symlink_to(outside.messages)
    (root / "s4").symlink_to(outside.folder)
    (root / "s5").mkdir()
    (root / "s5" / "file").symlink_to(inside.messages)
    root_link = tmp_path / "root-link"
    root_link.symlink_to(root)
    assert not leads_outside(inside.messages, root)
    assert leads_outside(root / "s3" / "file", root)
    assert leads_outside(root / "s4" / outside.messages.name, root)
    assert not leads_outside(root / "s5" / "file", root)
    assert not leads_outside(root_link / "s1" / inside.messages.name, root_link)
    assert not leads_outside(root_link / "s1" / inside.messages.name, root)
    assert leads_outside(root / "s1" / ".." / ".." / "elsewhere" / "s2" / outside.messages.name, root)
    assert leads_outside(root / ".." / "elsewhere" / outside.messages.name, root)
    (tmp_path / "top").write_text("")
    assert leads_outside(root / ".." / "top", root)
    assert not leads_outside(root / "s1" / "missing", root)  # not there (yet): inside by its path
