"""Suite 2 for Claude Code, crash safety: ``kill -9`` of the real ``postrun capture`` while it
ingests growing Claude Code transcripts.

A history of generated sessions, each transcript in three versions: its first third of lines,
two thirds, all of it (a round moves a session to its next version: it grows, or, from the
last back to the first, it is cut short: a rewrite the append-only read must notice). Every
round changes a random part of the history, starts the real capture (live or ``--once``)
and SIGKILLs it at a random moment, mostly inside the catch-up. After every kill the store is
intact and every stored session is exactly one of its versions (the one stored before, or the
one on disk now; never a mix); after the last, a restart converges to a one-shot ingest.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.claude_history import write_claude_history
from postrun.agents.claude_code import SessionLocation, list_sessions
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.conftest import run_postrun
from tests.reliability.kit import (
    StoredRecords,
    differences,
    install_sitecustomize,
    one_shot,
    read_records,
    store_problems,
    stored_variants,
)
from tests.reliability.test_crash_safety import SHORT_BATCHES, kill_at_random

VARIANTS = 3
INGEST_LINE = r" (DEBUG|INFO) claude-code (ingested|updated|unchanged) "


class History:
    """Generated sessions, the version of each on disk, and every version's records."""

    def __init__(self, tmp_path: Path, env: dict[str, str], sessions: int) -> None:
        self.source = tmp_path / "generated" / "projects"
        write_claude_history(self.source, seed=7, sessions=sessions, mean_turns=1.5)
        self.root = tmp_path / "claude" / "projects"
        shutil.copytree(self.source, self.root)
        self.env = env
        self.db = Path(env["POSTRUN_DB"])
        self.locations = {
            location.session_id: location
            for location in list_sessions(self.root).sessions
            if isinstance(location, SessionLocation)
        }
        self.versions: dict[str, list[StoredRecords]] = {session_id: [] for session_id in self.locations}
        self.on_disk: dict[str, int] = {}
        for variant in range(VARIANTS):
            reference = tmp_path / f"variant-{variant}.db"
            with Database.open(reference) as database:
                ingester = Ingester(database, max_bytes=2**28)
                for session_id, location in self.locations.items():
                    self.write(session_id, variant)
                    ingester.ingest(location)
            for session_id, records in read_records(reference).items():
                self.versions[session_id].append(records)
        for session_id in self.locations:
            self.write(session_id, 0)

    def write(self, session_id: str, variant: int) -> None:
        """The main transcript's first (variant + 1) thirds of lines; grown in place, or cut short."""
        location = self.locations[session_id]
        lines = (self.source / location.slug / f"{session_id}.jsonl").read_bytes().splitlines(keepends=True)
        wanted = b"".join(lines[: max(1, len(lines) * (variant + 1) // VARIANTS)])
        have = location.transcript.read_bytes() if location.transcript.exists() else b""
        if wanted.startswith(have):
            with location.transcript.open("ab") as out:  # as Claude Code writes: appended
                out.write(wanted[len(have) :])
        else:
            location.transcript.write_bytes(wanted)
        self.on_disk[session_id] = variant

    def stored_variants(self) -> dict[str, int | None]:
        return stored_variants(self.db, self.versions)


def killed_capture_env(env: dict[str, str], tmp_path: Path, agent: dict[str, str]) -> dict[str, str]:
    """The capture's environment for the kills: ``agent``'s settings, short batches, quick polls."""
    crash = (
        env
        | agent
        | {
            "POSTRUN_DEBOUNCE_SECONDS": "0.1",
            "POSTRUN_POLL_SECONDS": "0.5",
            "POSTRUN_LOG_LEVEL": "DEBUG",  # the kills are timed by the ingest lines
            "POSTRUN_INGEST_PROCESSES": "1",
        }
    )
    install_sitecustomize(tmp_path / "site", SHORT_BATCHES, crash)
    return crash


@pytest.fixture
def crash_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    folder = str(tmp_path / "claude" / "projects")
    return killed_capture_env(env, tmp_path, {"POSTRUN_AGENTS": "claude-code", "POSTRUN_CLAUDE_DIR": folder})


def kill_until_converged(history: Any, tmp_path: Path, *, agent: str, ingest_line: str) -> None:
    """Rounds of changes and kills (see the module's doc) over ``history`` (``versions``,
    ``on_disk``, ``write``, ``stored_variants``, ``db``, ``env``, ``root``), then a restart
    that must converge to a one-shot ingest of ``agent``'s files."""
    seed = random.SystemRandom().randrange(2**32)
    print(f"crash-safety seed {seed}")
    rng = random.Random(seed)
    stored: dict[str, int | None] = dict.fromkeys(history.versions)
    kills = rounds = partial = 0
    # Kill until ten kills landed and at least two of them inside a catch-up: where a kill
    # lands is up to the machine's load, so the rounds are bounded, not fixed.
    while kills < 10 or partial < 2:
        rounds += 1
        assert rounds <= 40, f"capture kept finishing before the kill ({kills} kills, {partial} inside a catch-up)"
        if rounds > 1:
            for session_id in rng.sample(sorted(history.versions), k=len(history.versions) * 2 // 5):
                history.write(session_id, (history.on_disk[session_id] + 1) % VARIANTS)
        changed = [s for s in history.versions if stored[s] != history.on_disk[s]]
        before = dict(stored)
        killed = kill_at_random(history, rng, tmp_path, len(changed), live=rounds % 2 == 1, ingest_line=ingest_line)
        kills += killed
        if history.db.exists():
            assert store_problems(history.db) == [], f"round {rounds}"
            stored = history.stored_variants()
        for session_id, variant in stored.items():
            assert variant in (before[session_id], history.on_disk[session_id]), (rounds, session_id, variant)
        moved = sum(stored[s] != before[s] for s in changed)
        partial += killed and 0 < moved < len(changed)
    print(f"{kills} kills in {rounds} rounds, {partial} inside a catch-up")
    restart = run_postrun("capture", "--once", env=history.env, timeout=120)
    assert restart.returncode == 0, restart.stderr
    clean = one_shot(history.root, tmp_path / "clean" / "postrun.db", history.env, agent=agent)
    assert differences(read_records(history.db), clean) == []
    assert store_problems(history.db) == []


def test_kill_9_while_claude_code_transcripts_grow(tmp_path: Path, crash_env: dict[str, str]) -> None:
    history = History(tmp_path, crash_env, sessions=40)
    kill_until_converged(history, tmp_path, agent="claude-code", ingest_line=INGEST_LINE)
