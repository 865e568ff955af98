"""Every agent's real sessions in the review app: headless Chromium driven by Playwright against
the real `postrun serve`, over a store the real `postrun ingest --agent KIND` filled from the
real fixtures of Cline, Claude Code and Codex (sub-agents, failed commands and rejected steps
among them). Each must show in the inbox with its agent's badge and open whole: every exported
step on its page, in its helper's section, saying what it did.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, isolated_environ, run_postrun
from tests.support.browser import PHONE, Watched, open_signed_in, require_chromium, shot
from tests.support.web import ServeProcess, wait_for

require_chromium()


@dataclass(frozen=True)
class Case:
    agent: str
    fixture: str  # under tests/fixtures/
    session: str
    needs_review: bool  # unreviewed with a danger flag, a failed command or a rejected step


CASES = [
    Case("claude-code", "claude-code-real/a_read_edit_write", "e144040e-bd9b-4030-8647-79a28a2ca005", False),
    Case("claude-code", "claude-code-real/b_bash", "d2ef0479-efa6-4291-bcf7-a23f2a9dd0ca", True),
    Case("claude-code", "claude-code-real/e_subagents", "973c7bbe-87bd-4c67-a1d0-eb15e8e8c39a", False),
    Case("claude-code", "claude-code/resume_plan_refused", "c0ffee00-0000-4000-8000-000000000001", True),
    Case("claude-code", "claude-code/subagents_nested", "c0ffee00-0000-4000-8000-000000000006", False),
    Case("codex", "codex-real/a_commands", "01a2330d-2877-74e1-85dd-6d88f53166fa", True),
    Case("codex", "codex-real/d_subagent", "01a2330d-8486-7383-9b2b-63e51f475249", True),
    Case("cline", "cline-real/b_run_commands", "1795976512762_vrqks", True),
    Case("cline", "cline-real/h_subagents", "1795976749765_vx695", False),
]
# Where each agent keeps its sessions inside a fixture case.
_FOLDER = {"claude-code": "claude/projects", "codex": "sessions", "cline": "data/sessions"}


@dataclass(frozen=True)
class Served:
    server: ServeProcess
    exported: dict[str, dict[str, Any]]  # session id -> `postrun export --format json`


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("agents")
    environ = isolated_environ(tmp)
    roots: dict[str, list[str]] = {}  # agent -> its cases' folders: one ingest each, not one per case
    for case in CASES:
        root = tmp / "agents" / case.fixture
        shutil.copytree(FIXTURES / case.fixture / _FOLDER[case.agent], root)
        roots.setdefault(case.agent, []).append(str(root))
    said = {agent: run_postrun("ingest", "--agent", agent, *folders, env=environ) for agent, folders in roots.items()}
    exported = {}
    for case in CASES:
        ingested = said[case.agent]
        assert f"ingested {case.agent} session {case.session}:" in ingested.stdout, ingested.stderr
        export = run_postrun("export", case.session, "--format", "json", env=environ)
        assert export.returncode == 0, export.stderr
        exported[case.session] = json.loads(export.stdout)
    server = ServeProcess(environ, tmp)
    yield Served(server, exported)
    server.kill()


@pytest.fixture
def server(served: Served) -> ServeProcess:
    return served.server


def _listed(page: Any) -> list[str]:
    rows = page.locator("table.sessions tbody tr")
    return [str(rows.nth(i).get_attribute("data-session")) for i in range(rows.count())]


def test_every_agent_shows_in_the_inbox_with_its_badge(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    listed = _listed(page)
    assert sorted(listed) == sorted(case.session for case in CASES)
    needs = [case.session for case in CASES if case.needs_review]
    assert sorted(listed[: len(needs)]) == sorted(needs)  # what needs review first
    for case in CASES:
        row = page.locator(f"tr[data-session='{case.session}']")
        assert row.locator(".agent-badge").inner_text() == case.agent, case
        assert ("needs-review" in (row.get_attribute("class") or "")) == case.needs_review, case
    text = " ".join(page.locator("#inbox").inner_text().split())
    assert f"{len(needs)} unreviewed sessions with danger flags, failed commands or rejected steps" in text
    shot(page, "agents-inbox")


@pytest.mark.parametrize("agent", sorted(_FOLDER))
def test_the_agent_filter_keeps_its_own_sessions(watched: Watched, server: ServeProcess, agent: str) -> None:
    page = watched.page
    page.select_option("form.filters select[name=agent]", agent)
    page.locator("form.filters button[type=submit]").click()
    page.wait_for_url(f"**agent={agent}**")
    assert sorted(_listed(page)) == sorted(case.session for case in CASES if case.agent == agent)
    assert set(page.locator("table.sessions .agent-badge").all_inner_texts()) == {agent}
    needs = sum(case.needs_review for case in CASES if case.agent == agent)
    assert f"Needs review · {agent}" in page.locator("#inbox").inner_text()
    assert f"{needs} unreviewed session" in page.locator("#inbox").inner_text()


def _said(step: dict[str, Any]) -> str:
    """A piece of what the step's line must say, taken from the export, not from the page."""
    payload = step["payload"]
    if step["type"] == "command":
        return str(payload["command"]).splitlines()[0][:40]
    if step["type"] in ("read", "edit"):
        return str(payload["path"])
    if step["type"] == "message":
        return f"{payload['role']}: " + (str(payload["text"]).split()[0] if payload.get("text") else "")
    return str(payload["tool_name"])


@pytest.mark.parametrize("case", CASES, ids=[case.fixture for case in CASES])
def test_each_session_opens_whole_from_its_row(
    watched: Watched, served: Served, server: ServeProcess, case: Case
) -> None:
    page = watched.page
    page.locator(f"tr[data-session='{case.session}'] a.open-link").click()
    page.wait_for_url(f"**/s/{case.session}")
    exported = served.exported[case.session]
    assert page.locator("h1").count() == 1
    assert page.locator(".session-top .agent-badge").inner_text() == case.agent
    steps = exported["steps"]
    assert page.locator(".step").count() == len(steps)
    helpers = {actor["id"] for actor in exported["actors"] if actor.get("parent_id")}
    assert {str(s.get_attribute("data-actor")) for s in page.locator("section.helper").all()} == helpers
    for actor in exported["actors"]:
        if actor.get("parent_id") in helpers:  # a helper's helper nests inside its section
            outer = page.locator(f"section.helper[data-actor='{actor['parent_id']}']")
            assert outer.locator(f"section.helper[data-actor='{actor['id']}']").count() == 1
    for step in steps:
        where = f"section.helper[data-actor='{step['actor_id']}'] " if step["actor_id"] in helpers else ""
        line = page.locator(f"{where}#step-{step['seq']} > .line .what")
        assert line.count() == 1, (case.session, step["seq"], step["actor_id"])
        assert _said(step) in line.inner_text(), (case.session, step["seq"])
    shot(page, f"agents-{case.fixture.replace('/', '-')}")


@pytest.mark.parametrize("case", [case for case in CASES if case.needs_review], ids=lambda case: case.fixture)
def test_the_first_flagged_step_opens_in_view(watched: Watched, served: Served, case: Case) -> None:
    page = watched.page
    link = page.locator(f"tr[data-session='{case.session}'] a.first-flag")
    seq = int(str(link.get_attribute("href")).rsplit("#step-", 1)[1])
    flagged = [step["seq"] for step in served.exported[case.session]["steps"] if step["flags"]]
    assert seq == min(flagged)
    link.click()
    page.wait_for_url(f"**/s/{case.session}#step-{seq}")
    step = page.locator(f"#step-{seq}")
    wait_for(lambda: "current" in (step.get_attribute("class") or ""), "the flagged step to be selected")
    header = page.locator("header.top").bounding_box()
    box = step.bounding_box()
    assert header and box and box["y"] >= header["y"] + header["height"] - 1, (box, header)
    assert box["y"] < page.viewport_size["height"]


def test_a_claude_code_commands_output_opens(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/d2ef0479-efa6-4291-bcf7-a23f2a9dd0ca#step-4")
    body = page.locator("#step-4 details.body")
    if body.get_attribute("open") is None:
        body.locator("summary").click()
    wait_for(lambda: "something broke" in body.locator(".body-content").inner_text(), "the command's output")
    assert "partial output on stdout" in body.locator(".body-content").inner_text()


def test_search_finds_every_agents_sessions_with_their_badge(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    for words, agent in (("something broke", "claude-code"), ("MARK-D", "codex"), ("config.py", "cline")):
        page.goto(f"{server.url}search?q={words.replace(' ', '+')}")
        badges = set(page.locator(".hits .agent-badge").all_inner_texts())
        assert agent in badges, (words, badges)


def test_every_agents_pages_fit_a_phone(browser: Any, server: ServeProcess) -> None:
    watched = open_signed_in(browser, server, PHONE)
    page = watched.page
    try:
        paths = ["", *(f"s/{case.session}" for case in CASES), "search?q=something+broke", "s/01a2330d"]
        for path in paths:
            answer = page.goto(server.url + path)
            assert answer is not None and answer.status == (300 if path == "s/01a2330d" else 200), path
            width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert width[0] <= width[1], (path, width)  # a long uuid id must wrap, not widen the page
        logged = "the server responded with a status of 300"
        watched.errors[:] = [error for error in watched.errors if logged not in error]
        shot(page, "agents-phone-ambiguous")
    finally:
        watched.close()


def _workspace_options(page: Any) -> list[str]:
    return [
        str(value)
        for value in page.locator("select[name=workspace] option").evaluate_all("(os) => os.map((o) => o.value)")
    ]


def test_a_running_serve_drops_a_forgotten_session_from_its_lists(browser: Any, tmp_path: Path) -> None:
    """Forgotten while `serve` runs, and another session stored before the next page: the
    session, its workspace and its agent leave every list and dropdown without a restart."""
    environ = isolated_environ(tmp_path)
    forgotten, kept, new = CASES[0], CASES[5], CASES[7]  # claude-code, codex, cline
    assert len({forgotten.agent, kept.agent, new.agent}) == 3

    def ingest(case: Case) -> None:
        root = tmp_path / "agents" / case.fixture
        shutil.copytree(FIXTURES / case.fixture / _FOLDER[case.agent], root)
        assert run_postrun("ingest", "--agent", case.agent, str(root), env=environ).returncode == 0

    ingest(forgotten)
    ingest(kept)
    served = ServeProcess(environ, tmp_path)
    watched = open_signed_in(browser, served)
    page = watched.page
    try:
        workspace = {case.session: f"/home/dev/work/{case.fixture.rsplit('/', 1)[1]}" for case in CASES}
        assert _workspace_options(page) == ["", *sorted([workspace[forgotten.session], workspace[kept.session]])]
        assert sorted(_listed(page)) == sorted([forgotten.session, kept.session])
        page.goto("about:blank")  # no live page asks meanwhile
        result = run_postrun("forget", forgotten.session, "--yes", env=environ)
        assert result.returncode == 0, result.stderr
        ingest(new)  # one more session: the store holds as many as the page saw
        page.goto(served.url)
        assert sorted(_listed(page)) == sorted([kept.session, new.session])
        assert _workspace_options(page) == ["", *sorted([workspace[kept.session], workspace[new.session]])]
        page.goto(f"{served.url}?q={forgotten.session[:8]}")
        assert _listed(page) == []
        page.goto(f"{served.url}?q=a_read_edit_write")
        assert _listed(page) == []
    finally:
        watched.close()
        served.kill()
