"""Claude Code's sessions in the team mirror, next to Cline's: the same rows, the agent column."""

from __future__ import annotations

from pathlib import Path

from postrun.mirror.push import Pusher, machine_origin
from postrun.mirror.target import mirror_target
from postrun.store.db import Database
from tests.conftest import FIXTURES, run_postrun
from tests.mirror.conftest import Mirror
from tests.support import mirror_check
from tests.support.capture_process import copy_data


def test_both_agents_sessions_reach_the_mirror_with_their_agent(
    tmp_path: Path, env: dict[str, str], mirror: Mirror, monkeypatch
) -> None:
    cline = copy_data("cline/basic_act", tmp_path / "cline")
    assert run_postrun("ingest", "--agent", "cline", str(cline), env=env).returncode == 0
    for case in ("b_bash", "e_subagents"):
        projects = FIXTURES / "claude-code-real" / case / "claude" / "projects"
        assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=env).returncode == 0
    db = Path(env["POSTRUN_DB"])
    monkeypatch.setenv("PGPASSFILE", str(mirror.passfile))
    with Database.open(db) as database:
        pushed = Pusher(mirror_target(mirror.url), database, machine_origin(database, "laptop-1", "ada")).drain()
    assert pushed.sessions == 3
    with mirror.server.admin(mirror.database) as connection:
        assert mirror_check.differences(db, connection) == []
        agents = connection.execute("SELECT agent, count(*) FROM postrun.sessions GROUP BY agent ORDER BY agent")
        assert agents.fetchall() == [("claude-code", 2), ("cline", 1)]
        actors = connection.execute(
            "SELECT count(*) FROM postrun.actors WHERE session_id = '973c7bbe-87bd-4c67-a1d0-eb15e8e8c39a'"
        ).fetchone()
        assert actors == (3,)
