"""Every fixture session of every agent opens in the review app: the real `postrun ingest
--agent KIND` over each case of tests/fixtures (Cline, Claude Code and Codex; real, generated
with the real CLIs and hand-made), the real `postrun serve`, headless Chromium on each
session's page (every exported step on it, no console error, no 5xx) and raw HTTP for the
parts a page loads later (each step's body, each turn, the history view, the downloads).
"""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, isolated_environ, run_postrun
from tests.support.browser import Watched, require_chromium
from tests.support.web import ServeProcess, ingest_fixtures, request, sign_in

require_chromium()

# Where each agent keeps its sessions inside a fixture case, by the folders of its cases.
_FOLDERS = {"claude-code": "claude/projects", "codex": "sessions"}


def _cases() -> list[tuple[str, Path]]:
    return [
        (agent, case)
        for agent in _FOLDERS
        for base in sorted(FIXTURES.glob(f"{agent}*"))
        for case in sorted(base.iterdir())
        if (case / "expect.json").exists() and (case / _FOLDERS[agent]).is_dir()
    ]


def _expected(case: Path) -> list[str]:
    return list(json.loads((case / "expect.json").read_text()).get("sessions", {}))


def _ingest_rounds(into: Path) -> list[tuple[str, list[str]]]:
    """Each case's folder copied under ``into``, grouped into ingests of many roots (one process
    per agent, not per case: 46 starts were most of the setup). A case naming a session an
    earlier case holds goes to a later round, so the later case's file is the one stored, as
    when each case was ingested alone in order."""
    rounds: list[dict[str, list[str]]] = []
    last_round: dict[str, int] = {}  # session id -> the round that last ingests it
    for agent, case in _cases():
        root = into / case.parent.name / case.name
        shutil.copytree(case / _FOLDERS[agent], root)
        ids = _expected(case)
        number = max((last_round[i] + 1 for i in ids if i in last_round), default=0)
        while len(rounds) <= number:
            rounds.append({})
        rounds[number].setdefault(agent, []).append(str(root))
        last_round.update(dict.fromkeys(ids, number))
    return [(agent, roots) for by_agent in rounds for agent, roots in by_agent.items()]


@dataclass(frozen=True)
class Served:
    server: ServeProcess
    cookie: str
    exported: dict[str, dict[str, Any]]  # session id -> `postrun export --format json`


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("every")
    environ = isolated_environ(tmp)
    ingest_fixtures(environ)  # every Cline case
    expected = [
        session_id
        for base in ("cline", "cline-real")
        for case in sorted((FIXTURES / base).iterdir())
        if (case / "expect.json").exists()
        for session_id in _expected(case)
    ]
    for agent, roots in _ingest_rounds(tmp / "agents"):
        ingested = run_postrun("ingest", "--agent", agent, *roots, env=environ)
        assert "Traceback" not in ingested.stderr, ingested.stderr
    expected += [session_id for _, case in _cases() for session_id in _expected(case)]
    exported = {}
    for session_id in expected:
        export = run_postrun("export", session_id, "--format", "json", env=environ)
        if export.returncode == 0:  # a case may expect a session a later case's file completes
            exported[session_id] = json.loads(export.stdout)
    assert len(exported) >= 40, sorted(exported)
    server = ServeProcess(environ, tmp)
    yield Served(server, sign_in(server), exported)
    server.kill()


@pytest.fixture
def server(served: Served) -> ServeProcess:
    return served.server


def test_every_fixture_session_opens_with_every_step(watched: Watched, served: Served) -> None:
    page = watched.page
    kinds = set()
    for session_id, exported in served.exported.items():
        answer = page.goto(f"{served.server.url}s/{urllib.parse.quote(session_id)}")
        assert answer is not None and answer.status == 200, session_id
        kind = exported["session"]["agent"]["kind"]
        kinds.add(kind)
        assert page.locator(".session-top .agent-badge").inner_text() == kind, session_id
        steps = exported["steps"]
        if len(steps) <= 300:  # a bigger session shows its last turn, the others load when opened
            assert page.locator(".step").count() == len(steps), session_id
    assert kinds == {"cline", "claude-code", "codex"}


def test_every_part_a_page_loads_later_answers(served: Served) -> None:
    failures = []
    for session_id, exported in served.exported.items():
        quoted = urllib.parse.quote(session_id)
        paths = [f"/s/{quoted}?history=1", f"/s/{quoted}/export.md", f"/s/{quoted}/export.json", f"/s/{quoted}/live"]
        paths += [f"/s/{quoted}/step?id={urllib.parse.quote(step['id'])}" for step in exported["steps"]]
        paths += [f"/s/{quoted}/turn?id={urllib.parse.quote(turn['id'])}" for turn in exported["turns"]]
        for path in paths:
            answer = request(served.server.port, path, cookie=served.cookie)
            if answer.status != 200:
                failures.append((path, answer.status, answer.body[:200]))
    assert failures == []
