"""End to end: an agent's file capture may not open (``chmod 000``), then made readable.

A chmod changes none of a session's fingerprints (size, mtime, inode), so the real
`postrun capture` must look at such a file again by itself, not wait for the agent's next
write (never, for a finished session) or a restart. Root opens any file, so as root the
capture runs as ``nobody`` (``setpriv``) over a folder of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, isolated_environ, postrun_command
from tests.support.capture_process import CaptureProcess, expected_steps, read_store
from tests.support.permissions import permissions_apply

NOBODY = 65534
CLAUDE = FIXTURES / "claude-code-real"
CODEX = FIXTURES / "codex-real"


def _unprivileged() -> list[str]:
    """The command prefix that runs `postrun` as a user file permissions apply to."""
    return permissions_apply(
        [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"], f"`postrun` cannot run as uid {NOBODY} here"
    )


def _capture(folder: Path, **settings: str) -> tuple[CaptureProcess, Path]:
    """The real capture, as that user, over ``folder`` with these ``POSTRUN_*`` settings, polling
    often and never sweeping (what brings a file back must not be a full sweep); and its store."""
    env = isolated_environ(folder)
    env.update(
        POSTRUN_DEBOUNCE_SECONDS="0.2",
        POSTRUN_POLL_SECONDS="0.3",
        POSTRUN_FULL_SWEEP_MINUTES="60",
        **{f"POSTRUN_{name.upper()}": value for name, value in settings.items()},
    )
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(folder)], check=True)
    program = [*_unprivileged(), *postrun_command()]
    return CaptureProcess(env, folder, program=program), Path(env["POSTRUN_DB"])


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder the unprivileged capture can write (pytest's own is private to root)."""
    made = Path(tempfile.mkdtemp(prefix="postrun-unreadable-"))
    if os.geteuid() == 0:
        os.chown(made, NOBODY, NOBODY)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _copy(source: Path, destination: Path) -> Path:
    shutil.copytree(source, destination, dirs_exist_ok=True)
    return destination


def test_files_made_readable_again_are_stored_without_a_new_write(folder: Path) -> None:
    projects = _copy(CLAUDE / "a_read_edit_write" / "claude" / "projects", folder / "claude" / "projects")
    sessions = _copy(CODEX / "a_commands" / "sessions", folder / "codex" / "sessions")
    (transcript,) = projects.rglob("*.jsonl")
    (rollout,) = sessions.rglob("rollout-*.jsonl")
    transcript.chmod(0)
    rollout.chmod(0)
    capture, db = _capture(folder, agents="claude-code,codex", claude_dir=str(projects), codex_dir=str(sessions))
    try:
        capture.wait_for_log(rf"ERROR claude-code {transcript.stem}: {transcript}: cannot open: Permission denied$")
        capture.wait_for_log(rf"WARNING codex: '{rollout}': skipped \(cannot open: Permission denied\)$")
        # One bad session never stops the others: a good one that comes now is stored.
        good = _copy(CLAUDE / "b_bash" / "claude" / "projects", projects)
        (good_transcript,) = (path for path in good.rglob("*.jsonl") if path != transcript)
        capture.wait_until(lambda: good_transcript.stem in read_store(db) or None, what="the good session stored")
        assert set(read_store(db)) == {good_transcript.stem}
        transcript.chmod(0o644)
        rollout.chmod(0o644)
        capture.wait_until(
            lambda: len(read_store(db)) == 3 or None, what="both sessions stored once readable", timeout=15
        )
        assert {transcript.stem, rollout.stem[-36:]} < set(read_store(db))  # a rollout's name ends with its id
        # Logged once each while unreadable, though looked at again at every poll.
        assert len(capture.lines(r" ERROR ")) == 1 and len(capture.lines(r" WARNING ")) == 1
    finally:
        capture.kill()


def test_a_helper_transcript_made_readable_again_is_stored_without_a_new_write(folder: Path) -> None:
    """A sub-agent's transcript capture cannot open does not hold its session back (the rest is
    stored); made readable, its steps are stored at a poll, though no fingerprint changed."""
    case = CLAUDE / "e_subagents"
    projects = _copy(case / "claude" / "projects", folder / "claude" / "projects")
    (transcript,) = projects.glob("*/*.jsonl")
    helper = sorted(projects.rglob("subagents/agent-*.jsonl"))[0]
    helper.chmod(0)
    whole = expected_steps(case, transcript.stem)
    capture, db = _capture(folder, agents="claude-code", claude_dir=str(projects))
    try:
        capture.wait_for_log(rf"claude-code {transcript.stem}: {helper}: cannot open: Permission denied")
        partial = read_store(db)[transcript.stem].steps
        assert 0 < partial < whole
        helper.chmod(0o644)
        capture.wait_until(
            lambda: read_store(db)[transcript.stem].steps == whole or None,
            what="the helper's steps stored once readable",
            timeout=15,
        )
        assert len(capture.lines(r"cannot open")) == 1  # logged once, though looked at again at every poll
    finally:
        capture.kill()


def test_a_helper_that_stays_unreadable_does_not_have_its_session_read_at_every_poll(folder: Path) -> None:
    """Before: the whole session was read again at every poll while the helper stayed
    unreadable (a CPU cost for a big finished session, and an INFO line each time)."""
    case = CLAUDE / "e_subagents"
    projects = _copy(case / "claude" / "projects", folder / "claude" / "projects")
    (transcript,) = projects.glob("*/*.jsonl")
    helper = sorted(projects.rglob("subagents/agent-*.jsonl"))[0]
    helper.chmod(0)
    # Polls alone find new sessions: each good one stored below is a poll that has run since.
    capture, db = _capture(folder, agents="claude-code", claude_dir=str(projects), use_events="false")
    try:
        capture.wait_for_log(rf"claude-code {transcript.stem}: {helper}: cannot open: Permission denied")
        for good_case in ("b_bash", "a_read_edit_write"):
            good = _copy(CLAUDE / good_case / "claude" / "projects", projects)
            (stem,) = (path.stem for path in good.glob("*/*.jsonl") if path.stem not in read_store(db))
            capture.wait_until(lambda stem=stem: stem in read_store(db) or None, what=f"{good_case} stored")
        assert capture.lines(rf"claude-code \w+ {transcript.stem} .* on poll") == []  # read once, at start-up
        helper.chmod(0o644)
        whole = expected_steps(case, transcript.stem)
        capture.wait_until(
            lambda: read_store(db)[transcript.stem].steps == whole or None,
            what="the helper's steps stored once readable",
            timeout=15,
        )
        assert len(capture.lines(r"cannot open")) == 1
    finally:
        capture.kill()
