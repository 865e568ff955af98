"""End to end: the real `postrun capture` while Claude Code's transcripts grow line by line."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import CaptureProcess, read_store

DEBOUNCE = 0.2
REAL = FIXTURES / "claude-code-real"
INGEST = (
    r"^\S+ INFO claude-code (ingested|updated|unchanged) {id} \(\d+ steps?, \d+ turns?, \d+ written\)"
    r" on {reason} in (\d+) ms$"
)
INCOMPLETE = "transcript line not complete yet (mid-write?); will retry on next change"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    folder = tmp_path / "claude" / "projects"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def capture_env(env: dict[str, str], projects: Path) -> dict[str, str]:
    env.update(
        POSTRUN_AGENTS="claude-code",
        POSTRUN_CLAUDE_DIR=str(projects),
        POSTRUN_DEBOUNCE_SECONDS=str(DEBOUNCE),
        POSTRUN_POLL_SECONDS="0.3",
        POSTRUN_RAW_COPY_SECONDS="0",
    )
    return env


@pytest.fixture
def start(capture_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[[], CaptureProcess]]:
    started: list[CaptureProcess] = []

    def launch() -> CaptureProcess:
        process = CaptureProcess(capture_env, tmp_path)
        started.append(process)
        return process

    yield launch
    for process in started:
        process.kill()


def kept_versions(case: Path) -> list[tuple[str, Path]]:
    """(path under the projects folder, snapshot) of each version Claude Code wrote, in order."""
    found = []
    for line in (case / "snapshots" / "index.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["snapshot"] and str(entry["file"]).startswith("projects/"):
            found.append((str(entry["file"]).removeprefix("projects/"), case / "snapshots" / entry["snapshot"]))
    return found


@pytest.mark.parametrize("case", sorted(path.name for path in REAL.iterdir() if path.is_dir()))
def test_a_transcript_growing_line_by_line_is_stored_as_a_one_shot_ingest(
    case: str, start: Callable[[], CaptureProcess], capture_env: dict[str, str], projects: Path, tmp_path: Path
) -> None:
    """Each kept version written line by line, one line in three cut in the middle first; the
    store ends as a one-shot ingest of the final files, and each append's cost is measured."""
    source = REAL / case
    (slug,) = (source / "claude" / "projects").iterdir()
    (session_id,) = [path.stem for path in slug.glob("*.jsonl")]
    db = Path(capture_env["POSTRUN_DB"])
    capture = start()
    capture.wait_for_log(r"INFO claude-code: watching ")
    ingest_line = INGEST.format(id=session_id, reason="(event|poll)")
    costs: list[tuple[int, int, int]] = []  # (bytes appended, file size, ingest ms)
    cut_lines = 0
    for number, (relative, snapshot) in enumerate(kept_versions(source)):
        target = projects / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        wanted = snapshot.read_bytes()
        if not relative.endswith(".jsonl"):
            temporary = target.with_name(f"{target.name}.tmp.{number}")
            temporary.write_bytes(wanted)
            temporary.replace(target)  # Claude Code replaces its sidecars whole
            continue
        have = target.read_bytes() if target.exists() else b""
        assert wanted.startswith(have)  # transcripts only grow
        main = target.name == f"{session_id}.jsonl"
        for position, line in enumerate(wanted[len(have) :].splitlines(keepends=True)):
            seen = len(capture.lines(ingest_line))
            if main and have and position % 3 == 1:
                with target.open("ab") as out:
                    out.write(line[: len(line) // 2])  # caught half written
                cut_lines += 1
                capture.wait_for_log(re.escape(f"claude-code {session_id}: {INCOMPLETE}"), count=cut_lines)
                seen = len(capture.lines(ingest_line))
                line = line[len(line) // 2 :]
            with target.open("ab") as out:
                out.write(line)
            if main and have and position % 3 == 0:
                logged = capture.wait_for_log(ingest_line, count=seen + 1)
                took = re.search(r" in (\d+) ms$", logged[-1])
                assert took is not None
                costs.append((len(line), target.stat().st_size, int(took.group(1))))
            have = have or line
    one_shot = dict(capture_env, POSTRUN_DB=str(tmp_path / "one-shot.db"))
    assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=one_shot).returncode == 0
    fresh = read_store(tmp_path / "one-shot.db")[session_id]

    def same_as_fresh() -> bool:
        stored = read_store(db).get(session_id)
        return stored is not None and (stored.digest, stored.step_digests) == (fresh.digest, fresh.step_digests)

    capture.wait_until(same_as_fresh, what=f"{session_id} stored as a one-shot ingest of the final files")
    assert cut_lines >= 3
    assert capture.lines(r" (ERROR|WARNING) ") == []
    assert capture.lines(r"\.tmp") == []
    shown = ", ".join(f"{size // 1024} KB +{added} B: {ms} ms" for added, size, ms in costs[-6:])
    print(f"{case}: {len(costs)} appends stored live; the last ones: {shown}")


def test_sessions_of_both_agents_are_captured_at_once(
    start: Callable[[], CaptureProcess], capture_env: dict[str, str], projects: Path, tmp_path: Path
) -> None:
    cline = tmp_path / "cline"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", cline)
    capture_env.update(POSTRUN_AGENTS="cline,claude-code", POSTRUN_CLINE_DIR=str(cline / "sessions"))
    capture = start()
    capture.wait_for_log(r"INFO capture: caught up with 1 session in ")
    shutil.copytree(REAL / "a_read_edit_write" / "claude" / "projects", projects, dirs_exist_ok=True)
    db = Path(capture_env["POSTRUN_DB"])
    capture.wait_until(lambda: len(read_store(db)) == 2 or None, what="both agents' sessions stored")
    listed = run_postrun("sessions", "--json", env=capture_env)
    assert sorted(session["agent"] for session in json.loads(listed.stdout)) == ["claude-code", "cline"]
    assert capture.lines(r" (ERROR|WARNING) ") == []


def test_a_projects_folder_that_is_a_symlink_gives_events(
    start: Callable[[], CaptureProcess], capture_env: dict[str, str], projects: Path, tmp_path: Path
) -> None:
    """~/.claude/projects may be a symlink (agents' data on another disk): a new session is
    stored on an event within the debounce, not at the next poll."""
    link = tmp_path / "link-to-projects"
    link.symlink_to(projects)
    capture_env.update(POSTRUN_CLAUDE_DIR=str(link), POSTRUN_POLL_SECONDS="60")
    capture = start()
    capture.wait_for_log(r"INFO claude-code: watching ")
    (slug,) = (REAL / "b_bash" / "claude" / "projects").iterdir()
    (transcript,) = slug.glob("*.jsonl")
    # The project folder arrives whole (one rename): the event on the root alone announces it.
    staged = shutil.copytree(slug, tmp_path / "staged")
    staged.rename(link / slug.name)
    capture.wait_for_log(INGEST.format(id=transcript.stem, reason="event"), timeout=10)


def test_a_sub_agent_written_after_its_parent_is_followed_by_events(
    start: Callable[[], CaptureProcess], capture_env: dict[str, str], projects: Path, tmp_path: Path
) -> None:
    """Claude Code makes ``<id>/subagents/`` after the transcript, and the parent is idle while
    its sub-agent works: the sub-agent's lines must come on events, not wait for each poll."""
    capture_env.update(POSTRUN_POLL_SECONDS="60")
    (slug,) = (REAL / "e_subagents" / "claude" / "projects").iterdir()
    (transcript,) = slug.glob("*.jsonl")
    session_id = transcript.stem
    db = Path(capture_env["POSTRUN_DB"])
    capture = start()
    capture.wait_for_log(r"INFO claude-code: watching ")
    staged = tmp_path / "staged"
    staged.mkdir()
    shutil.copy(transcript, staged / transcript.name)
    staged.rename(projects / slug.name)  # one rename: the root's event announces it
    capture.wait_for_log(INGEST.format(id=session_id, reason="event"))
    subagents = projects / slug.name / session_id / "subagents"
    subagents.mkdir(parents=True)
    for sidecar in sorted((slug / session_id / "subagents").glob("*.meta.json")):
        shutil.copy(sidecar, subagents / sidecar.name)
    for helper in sorted((slug / session_id / "subagents").glob("*.jsonl")):
        lines = helper.read_bytes().splitlines(keepends=True)
        before = read_store(db)[session_id].steps
        with (subagents / helper.name).open("ab") as out:
            out.write(lines[0])  # its task: one step
        capture.wait_until(
            lambda before=before: read_store(db)[session_id].steps > before or None,
            what="the sub-agent's first step",
            timeout=10,
        )
        with (subagents / helper.name).open("ab") as out:
            out.writelines(lines[1:])
    one_shot = dict(capture_env, POSTRUN_DB=str(tmp_path / "one-shot.db"))
    assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=one_shot).returncode == 0
    fresh = read_store(tmp_path / "one-shot.db")[session_id]

    def same_as_fresh() -> bool:
        stored = read_store(db)[session_id]
        return (stored.digest, stored.step_digests) == (fresh.digest, fresh.step_digests)

    capture.wait_until(same_as_fresh, what="the sub-agents' steps, on events", timeout=10)
    assert capture.lines(r" on poll in ") == []
