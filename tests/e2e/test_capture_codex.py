"""End to end: the real `postrun capture` while Codex's rollouts grow line by line."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zstandard

from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import CaptureProcess, read_store

DEBOUNCE = 0.2
REAL = FIXTURES / "codex-real"
INGEST = (
    r"^\S+ INFO codex (ingested|updated|unchanged) {id} \(\d+ steps?, \d+ turns?, \d+ written\)"
    r" on {reason} in (\d+) ms$"
)


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    folder = tmp_path / "codex" / "sessions"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def capture_env(env: dict[str, str], sessions: Path) -> dict[str, str]:
    env.update(
        POSTRUN_AGENTS="codex",
        POSTRUN_CODEX_DIR=str(sessions),
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


def versions(case: Path) -> list[tuple[str, bytes]]:
    """(path under the sessions folder, content) of each version Codex wrote, in order: every
    one a prefix of the final file."""
    found = []
    for line in (case / "snapshots" / "index.jsonl").read_text().splitlines():
        entry = json.loads(line)
        final = (case / entry["file"]).read_bytes()
        found.append((str(entry["file"]).removeprefix("sessions/"), final[: entry["size"]]))
    return found


@pytest.mark.parametrize("case", sorted(path.name for path in REAL.iterdir() if path.is_dir()))
def test_rollouts_growing_line_by_line_are_stored_as_a_one_shot_ingest(
    case: str, start: Callable[[], CaptureProcess], capture_env: dict[str, str], sessions: Path, tmp_path: Path
) -> None:
    """Every version Codex wrote, each new line appended alone, one in three cut in the middle
    first; the store ends as a one-shot ingest of the final files, each append's cost logged."""
    source = REAL / case
    expected = json.loads((source / "expect.json").read_text())
    (session_id,) = expected["sessions"]
    db = Path(capture_env["POSTRUN_DB"])
    capture = start()
    capture.wait_for_log(r"INFO codex: watching ")
    ingest_line = INGEST.format(id=session_id, reason="(event|poll)")
    costs: list[tuple[int, int, int]] = []  # (bytes appended, file size, ingest ms)
    cut_lines = 0
    for relative, wanted in versions(source):
        target = sessions / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        have = target.read_bytes() if target.exists() else b""
        assert wanted.startswith(have)  # rollouts only grow
        if not have:
            target.write_bytes(b"")  # Codex creates the file empty first
        stored = session_id in read_store(db)
        for position, line in enumerate(wanted[len(have) :].splitlines(keepends=True)):
            seen = len(capture.lines(ingest_line))
            if stored and position % 3 == 1:
                with target.open("ab") as out:
                    out.write(line[: len(line) // 2])  # caught half written: nothing changes
                cut_lines += 1
                line = line[len(line) // 2 :]
            with target.open("ab") as out:
                out.write(line)
            if stored and position % 3 == 0 and target.name.endswith(f"{session_id}.jsonl"):
                logged = capture.wait_for_log(ingest_line, count=seen + 1)
                took = re.search(r" in (\d+) ms$", logged[-1])
                assert took is not None
                costs.append((len(line), target.stat().st_size, int(took.group(1))))
        if not stored and wanted and target.name.endswith(f"{session_id}.jsonl"):
            capture.wait_until(lambda: session_id in read_store(db) or None, what="the session stored")
    one_shot = dict(capture_env, POSTRUN_DB=str(tmp_path / "one-shot.db"))
    assert run_postrun("ingest", "--agent", "codex", str(sessions), env=one_shot).returncode == 0
    fresh = read_store(tmp_path / "one-shot.db")[session_id]

    def same_as_fresh() -> bool:
        live = read_store(db).get(session_id)
        return live is not None and (live.digest, live.step_digests) == (fresh.digest, fresh.step_digests)

    capture.wait_until(same_as_fresh, what=f"{session_id} stored as a one-shot ingest of the final files")
    assert set(read_store(db)) == {session_id}  # a sub-agent's thread is never a session of its own
    assert cut_lines >= 3 and costs
    assert capture.lines(r" (ERROR|WARNING) ") == []
    shown = ", ".join(f"{size // 1024} KB +{added} B: {ms} ms" for added, size, ms in costs[-6:])
    print(f"{case}: {len(costs)} appends stored live; the last ones: {shown}")


def test_a_rollout_compressed_then_archived_stays_one_session_and_its_files_come_back(
    start: Callable[[], CaptureProcess], capture_env: dict[str, str], sessions: Path, tmp_path: Path
) -> None:
    shutil.copytree(REAL / "d_subagent" / "sessions", sessions, dirs_exist_ok=True)
    session_id = "01a2330d-8486-7383-9b2b-63e51f475249"
    db = Path(capture_env["POSTRUN_DB"])
    capture = start()
    capture.wait_until(lambda: session_id in read_store(db) or None, what="the session stored")
    first = read_store(db)[session_id]
    (rollout,) = sessions.rglob(f"*{session_id}.jsonl")
    original = rollout.read_bytes()
    packed = rollout.with_name(rollout.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(original))
    rollout.unlink()  # compressed in place, as Codex's local store compression does
    archive = sessions.parent / "archived_sessions"
    archive.mkdir()
    packed.rename(archive / packed.name)  # then archived
    capture.wait_until(
        lambda: ((found := read_store(db).get(session_id)) is not None and found.digest != first.digest) or None,
        what="the session read again from its archived, compressed rollout (its source changed)",
        timeout=60,
    )
    again = read_store(db)[session_id]
    assert again.step_digests == first.step_digests and set(read_store(db)) == {session_id}
    capture.stop()
    shutil.rmtree(sessions.parent)  # Codex's folder is gone
    back = tmp_path / "back"
    restored = run_postrun("raw", session_id, "--version", "1", "--to", str(back), env=capture_env)
    assert restored.returncode == 0, restored.stderr
    assert (back / "sessions" / rollout.relative_to(sessions)).read_bytes() == original
    assert capture.lines(r" (ERROR|WARNING) ") == []


def test_a_sessions_folder_that_is_a_symlink_gives_events(
    start: Callable[[], CaptureProcess], capture_env: dict[str, str], sessions: Path, tmp_path: Path
) -> None:
    """~/.codex/sessions may be a symlink (agents' data on another disk): a new rollout is
    stored on an event within the debounce, not at the next poll."""
    link = tmp_path / "link-to-sessions"
    link.symlink_to(sessions)
    capture_env.update(POSTRUN_CODEX_DIR=str(link), POSTRUN_POLL_SECONDS="60")
    capture = start()
    capture.wait_for_log(r"INFO codex: watching ")
    source = REAL / "a_commands" / "sessions"
    (rollout,) = source.rglob("rollout-*.jsonl")
    # The year's folder arrives whole (one rename): the event on the root alone announces it.
    (year,) = source.iterdir()
    staged = shutil.copytree(year, tmp_path / "staged")
    staged.rename(link / year.name)
    capture.wait_for_log(INGEST.format(id=rollout.stem[-36:], reason="event"), timeout=10)
