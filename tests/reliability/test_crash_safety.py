"""Suite 2, crash safety: ``kill -9`` of the real ``postrun capture`` at random moments.

A history of synthetic sessions, each of which exists in three versions (a first one; one
with more steps and an earlier step changed; one restored to fewer steps and ended). Every
round rewrites a random part of the history to its next version, starts the real capture
(live or ``--once``) and kills it with SIGKILL at a random moment: some rounds at a random
time after the start (during start-up, the store's creation or the catch-up), most after a
random number of ingests plus a random few milliseconds (inside the catch-up). After every
kill:

- ``PRAGMA integrity_check`` and the foreign-key check are clean, and the search index
  matches the steps;
- every stored session is exactly one of its valid versions, record by record: the one
  stored before the round, or the one on disk now (never a mix of two);

and after the last round a restart (``capture --once``) converges to exactly the store a
clean one-shot ``postrun ingest`` of the final files gives.
"""

from __future__ import annotations

import random
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.conftest import postrun_command, run_postrun
from tests.reliability.kit import (
    StoredRecords,
    Synthetic,
    differences,
    install_sitecustomize,
    one_shot,
    read_records,
    store_problems,
    stored_variants,
)
from tests.support.capture_process import CaptureProcess
from tests.support.processes import mapping_processes

VARIANTS = 3
INGEST_LINE = r" (DEBUG|INFO) cline (ingested|updated|unchanged) "  # start-up ingests log at DEBUG


def build(session_id: str, seed: int, variant: int) -> Synthetic:
    """Version ``variant`` of a session (deterministic): each version differs from the others."""
    session = Synthetic(session_id, seed=seed, with_helper=seed % 2 == 0)  # half have a sub-agent
    for _ in range(20 + seed % 20):
        session.grow()
    if variant >= 1:
        for _ in range(15):
            session.grow()
        session.edit_earlier()
    if variant == 2:
        session.restore()
        session.status = "completed"
    return session


def history_id(index: int) -> str:
    return f"{1790000000000 + index * 60_000}_c{index:04d}"


@dataclass
class History:
    """The sessions root, what each session's files hold now, and every version's records."""

    root: Path
    env: dict[str, str]
    db: Path
    versions: dict[str, list[StoredRecords]]  # session id -> records of each variant
    on_disk: dict[str, int]

    def write(self, session_id: str, variant: int) -> None:
        build(session_id, int(session_id[-4:]), variant).write(self.root)
        self.on_disk[session_id] = variant

    def stored_variants(self) -> dict[str, int | None]:
        """Which version each session holds in the store now; fails on anything else."""
        return stored_variants(self.db, self.versions)


def make_history(tmp_path: Path, env: dict[str, str], sessions: int) -> History:
    root = tmp_path / "cline" / "sessions"
    ids = [history_id(index) for index in range(sessions)]
    versions: dict[str, list[StoredRecords]] = {session_id: [] for session_id in ids}
    # Each version's records, from an in-process ingest of that version's files at their real path.
    for variant in range(VARIANTS):
        reference = tmp_path / f"variant-{variant}.db"
        with Database.open(reference) as database:
            ingester = Ingester(database, max_bytes=2**26)
            for session_id in ids:
                build(session_id, int(session_id[-4:]), variant).write(root)
                ingester.ingest(SessionLocation.in_root(root, session_id))
        for session_id, records in read_records(reference).items():
            versions[session_id].append(records)
    history = History(root, env, Path(env["POSTRUN_DB"]), versions, {})
    for session_id in ids:
        history.write(session_id, 0)
    return history


def kill_at_random(
    history: Any, rng: random.Random, workdir: Path, changed: int, live: bool, ingest_line: str = INGEST_LINE
) -> bool:
    """Start capture and SIGKILL it at a random moment; False when it finished first (--once).
    ``history`` has the capture's ``env``; ``ingest_line`` matches the lines it logs per session."""
    capture = CaptureProcess(history.env, workdir, *(() if live else ("--once",)))
    try:
        if changed and rng.random() < 0.75:
            # Inside the catch-up: after a random number of ingests, plus a few milliseconds.
            target = rng.randint(1, changed)

            def reached() -> bool:
                return capture.process.poll() is not None or len(capture.lines(ingest_line)) >= target

            capture.wait_until(reached, what=f"{target} ingests")
            time.sleep(rng.uniform(0, 0.015))
        else:
            time.sleep(rng.uniform(0, 1.5))  # anywhere from the interpreter's start on
        finished = capture.process.poll() is not None
        if not finished:
            capture.process.kill()  # SIGKILL: no handler, no cleanup
            capture.process.wait(10)
        assert "Traceback" not in capture.log(), capture.log()
        return not finished
    finally:
        capture.kill()


def run_rounds(history: History, tmp_path: Path, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    print(f"crash-safety seed {seed}")
    stored: dict[str, int | None] = dict.fromkeys(history.versions)
    done = partial = rounds = 0
    while done < kills:
        rounds += 1
        assert rounds <= 3 * kills, "capture kept finishing before the kill"
        if rounds > 1:
            for session_id in rng.sample(sorted(history.versions), k=len(history.versions) * 2 // 5):
                history.write(session_id, (history.on_disk[session_id] + 1) % VARIANTS)
        changed = [s for s in history.versions if stored[s] != history.on_disk[s]]
        before = dict(stored)
        killed = kill_at_random(history, rng, tmp_path, len(changed), live=rounds % 2 == 1)
        done += killed
        if history.db.exists():
            assert store_problems(history.db) == [], f"round {rounds}"
        stored = history.stored_variants() if history.db.exists() else dict.fromkeys(history.versions)
        for session_id, variant in stored.items():
            assert variant in (before[session_id], history.on_disk[session_id]), (
                f"round {rounds}: {session_id} holds version {variant}, valid: {before[session_id]} (stored before)"
                f" or {history.on_disk[session_id]} (on disk)"
            )
        moved = sum(stored[s] != before[s] for s in changed)
        partial += killed and 0 < moved < len(changed)
    print(f"{done} kills in {rounds} rounds, {partial} inside a catch-up")
    assert partial >= kills // 4, "too few kills landed inside a catch-up to prove anything"


def converges(history: History, tmp_path: Path) -> None:
    restart = run_postrun("capture", "--once", env=history.env, timeout=120)
    assert restart.returncode == 0, restart.stderr
    assert "Traceback" not in restart.stderr
    clean = one_shot(history.root, tmp_path / "clean" / "postrun.db", history.env)
    assert differences(read_records(history.db), clean) == []
    assert store_problems(history.db) == []
    assert all(variant is not None for variant in history.stored_variants().values())


# A catch-up commits a batch of sessions every half second; these catch-ups take a fraction
# of that, so the processes here commit every twentieth of a second: the kills then land
# inside a transaction of many sessions and between two of them, as in a long history's.
SHORT_BATCHES = """
import postrun.ingest.batches

postrun.ingest.batches.BATCH_SECONDS = 0.05
"""


@pytest.fixture
def crash_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    crash = env | {
        "POSTRUN_CLINE_DIR": str(tmp_path / "cline" / "sessions"),
        "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        "POSTRUN_POLL_SECONDS": "0.5",
        "POSTRUN_LOG_LEVEL": "DEBUG",  # the kills are timed by the ingest lines (one per session as its batch commits)
        "POSTRUN_INGEST_PROCESSES": "1",  # capture's catch-ups mapped apart, as a long history's are
    }
    install_sitecustomize(tmp_path / "site", SHORT_BATCHES, crash)
    return crash


def crash_test(tmp_path: Path, env: dict[str, str], *, sessions: int, kills: int) -> None:
    history = make_history(tmp_path, env, sessions)
    run_rounds(history, tmp_path, kills, seed=random.SystemRandom().randrange(2**32))
    converges(history, tmp_path)


def test_kill_9_during_ingest_never_corrupts_or_mixes(tmp_path: Path, crash_env: dict[str, str]) -> None:
    crash_test(tmp_path, crash_env, sessions=120, kills=20)


@pytest.mark.slow
def test_kill_9_many_times_over_a_larger_history(tmp_path: Path, crash_env: dict[str, str]) -> None:
    crash_test(tmp_path, crash_env, sessions=400, kills=80)


def test_kill_9_of_a_catch_up_ends_its_mapping_processes(tmp_path: Path, crash_env: dict[str, str]) -> None:
    """``postrun ingest`` killed inside a catch-up that processes map: they end with it (their
    socket's other end is gone), and the store is intact and converges, as for capture."""
    history = make_history(tmp_path, crash_env, 60)
    env = history.env | {"POSTRUN_INGEST_PROCESSES": "2"}
    inside = 0
    for rounds in range(1, 4):
        if rounds > 1:
            for session_id in history.versions:  # all of them: a catch-up of several batches
                history.write(session_id, (history.on_disk[session_id] + 1) % VARIANTS)
        stored_before = read_records(history.db) if history.db.exists() else {}
        ingest = subprocess.Popen(
            [*postrun_command(), "ingest", "--agent", "cline", str(history.root)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            parent = psutil.Process(ingest.pid)
            deadline = time.monotonic() + 60
            started: list[psutil.Process] = []
            while ingest.poll() is None and time.monotonic() < deadline:
                started = started if len(started) == 2 else mapping_processes(parent)
                # Killed once the first batch is committed (mid-catch-up, when more are to come).
                if len(started) == 2 and history.db.exists() and read_records(history.db) != stored_before:
                    break
                time.sleep(0.005)
            inside += ingest.poll() is None
            ingest.kill()
            ingest.wait(10)
            assert len(started) == 2, "the mapping processes never started"
            _, alive = psutil.wait_procs(started, timeout=30)
            assert alive == [], f"round {rounds}: mapping processes outlived the writer"
        finally:
            ingest.kill()
            assert ingest.stderr is not None
            assert "Traceback" not in ingest.stderr.read().decode(errors="replace")
            ingest.stderr.close()
        assert store_problems(history.db) == [], f"round {rounds}"
        history.stored_variants()  # each session one valid version, never a mix
    print(f"{inside} of 3 kills inside the catch-up")
    assert inside >= 1, "no kill landed inside the catch-up"
    finished = run_postrun("ingest", "--agent", "cline", str(history.root), env=env)
    assert finished.returncode == 0, finished.stderr
    clean = one_shot(history.root, tmp_path / "clean" / "postrun.db", history.env)
    assert differences(read_records(history.db), clean) == []
