"""Suite 2 for Codex, crash safety: ``kill -9`` of the real ``postrun capture`` while it
ingests growing Codex rollouts.

A generated history (sessions with sub-agents, each thread a rollout of its own), each
session in three versions: every one of its rollouts at its first third of lines, two
thirds, all of it (a round moves a session to its next version: its rollouts grow, or, from
the last back to the first, are cut short: a rewrite the append-only read must notice).
Every round changes a random part of the history, starts the real capture (live or
``--once``) and SIGKILLs it at a random moment, mostly inside the catch-up. After every kill
the store is intact and every stored session is exactly one of its versions (the one stored
before, or the one on disk now; never a mix, never a sub-agent's rollout of one version
with the root's of another); after the last, a restart converges to a one-shot ingest.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.codex_history import write_codex_history
from postrun.agents.codex import SessionLocation, group_sessions, list_rollouts
from postrun.agents.codex.reading import read_metas
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from tests.reliability.kit import StoredRecords, read_records, stored_variants
from tests.reliability.test_crash_claude_code import VARIANTS, kill_until_converged, killed_capture_env

MAX_BYTES = 2**28
INGEST_LINE = r" (DEBUG|INFO) codex (ingested|updated|unchanged) "


class History:
    """Generated sessions, the version of each on disk, and every version's records."""

    def __init__(self, tmp_path: Path, env: dict[str, str], sessions: int) -> None:
        self.source = tmp_path / "generated" / "sessions"
        write_codex_history(self.source, seed=11, sessions=sessions, mean_turns=1.5)
        self.root = tmp_path / "codex" / "sessions"
        shutil.copytree(self.source, self.root)
        self.env = env
        self.db = Path(env["POSTRUN_DB"])
        listing = list_rollouts(self.root)
        metas, problems = read_metas(listing.rollouts, max_bytes=MAX_BYTES)
        assert problems == {}
        self.locations: dict[str, SessionLocation] = {
            location.session_id: location for location in group_sessions(listing.rollouts, metas)
        }
        assert all(location.root is not None for location in self.locations.values())
        assert any(location.children for location in self.locations.values()), "no session with a sub-agent"
        self.versions: dict[str, list[StoredRecords]] = {session_id: [] for session_id in self.locations}
        self.on_disk: dict[str, int] = {}
        for variant in range(VARIANTS):
            reference = tmp_path / f"variant-{variant}.db"
            with Database.open(reference) as database:
                ingester = Ingester(database, max_bytes=MAX_BYTES)
                for session_id, location in self.locations.items():
                    self.write(session_id, variant)
                    ingester.ingest(location)
            for session_id, records in read_records(reference).items():
                self.versions[session_id].append(records)
        for session_id in self.locations:
            self.write(session_id, 0)

    def write(self, session_id: str, variant: int) -> None:
        """Each rollout's first (variant + 1) thirds of lines; grown in place, or cut short."""
        for rollout in self.locations[session_id].rollouts:
            source = self.source / rollout.path.relative_to(self.root)
            lines = source.read_bytes().splitlines(keepends=True)
            wanted = b"".join(lines[: max(1, len(lines) * (variant + 1) // VARIANTS)])
            have = rollout.path.read_bytes() if rollout.path.exists() else b""
            if wanted.startswith(have):
                with rollout.path.open("ab") as out:  # as Codex writes: appended
                    out.write(wanted[len(have) :])
            else:
                rollout.path.write_bytes(wanted)
        self.on_disk[session_id] = variant

    def stored_variants(self) -> dict[str, int | None]:
        return stored_variants(self.db, self.versions)


@pytest.fixture
def crash_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    folder = str(tmp_path / "codex" / "sessions")
    return killed_capture_env(env, tmp_path, {"POSTRUN_AGENTS": "codex", "POSTRUN_CODEX_DIR": folder})


def test_kill_9_while_codex_rollouts_grow(tmp_path: Path, crash_env: dict[str, str]) -> None:
    history = History(tmp_path, crash_env, sessions=120)
    kill_until_converged(history, tmp_path, agent="codex", ingest_line=INGEST_LINE)
