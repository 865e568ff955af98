"""The real `postrun` over sessions with helpers: show, export, search and sessions tell who did what."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_postrun

LEAD = "1795976749765_vx695"  # cline-real/h_subagents
SUB1, SUB2 = "agent_1795976750621_u6sv2j", "agent_1795976750622_zikz6r"
TEAM = "1790000500000_teams"  # cline/teammate


@pytest.fixture
def stored(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    for case in ("cline-real/h_subagents", "cline/teammate"):
        shutil.copytree(FIXTURES / case / "data" / "sessions", tmp_path / "sessions", dirs_exist_ok=True)
    ingest = run_postrun("ingest", str(tmp_path / "sessions"), env=env)
    assert ingest.returncode == 0, ingest.stderr
    return env


def test_show_nests_each_helper_under_the_step_that_started_it(stored: dict[str, str]) -> None:
    shown = run_postrun("show", LEAD, env=stored).stdout.splitlines()
    spawn = next(i for i, line in enumerate(shown) if line.startswith("  #2    other    spawn_agent"))
    assert shown[spawn + 1] == f"    ↳ subagent {SUB1}"  # its label is the task, shown right below
    assert shown[spawn + 4] == "      #5    read     /home/dev/work/h_subagents/svc/config.py  [ok]"
    assert "      #9    command  cd svc && python3 main.py  [ok]" in shown
    assert shown[-1].startswith("  #11   message  assistant: Summary:")
    cost = next(line for line in shown if line.startswith("cost "))
    assert cost.endswith(
        "6 API requests, tokens in 6,190 / out 300 (cache read 0, write 0);"
        " 2 helpers $0.0000, 4 API requests, tokens in 4,120 / out 200"
    )
    team = run_postrun("show", TEAM, env=stored).stdout
    assert (
        "    ↳ teammate reviewer__Z2skp8: reviewer\n      #4    message  user: Check app.py for bugs.  [ok]\n" in team
    )
    assert "      #5    command  python3 app.py  [failed (exit 1, cline_tool_error)]\n" in team
    assert (
        "  #9    message  assistant: The reviewer is writing a summary.  [ok]\n    ↳ teammate reviewer__Q9aa01" in team
    )
    assert "; 2 helpers $0.0180, 3 API requests" in team


def test_show_nests_a_helper_s_own_helper_under_the_step_that_started_it(tmp_path: Path, env: dict[str, str]) -> None:
    # README: `show` nests each helper's steps under the step that started it; a sub-agent's own
    # sub-agent was shown beside it, with its parent's heading repeated after it.
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude-code" / "subagents_nested" / "claude" / "projects", projects)
    assert run_postrun("ingest", "--agent", "claude-code", str(projects), env=env).returncode == 0
    shown = run_postrun("show", "c0ffee00-0000-4000-8000-000000000006", env=env).stdout
    assert (
        "  #2    other    Agent: OUTER: count the files  [ok]\n"
        "    ↳ subagent agent-aaaa1111: Outer helper\n"
        "      #3    message  system: OUTER: count the files  [ok]\n"
        "      #4    other    Agent: INNER: run ls  [ok]\n"
        "        ↳ subagent agent-bbbb2222: Inner helper\n"
        "          #5    message  system: INNER: run ls  [ok]\n"
        "          #6    command  ls | wc -l  [ok (exit 0)]\n"
        "          #7    message  assistant: 4 files.  [ok]\n"
        "      #8    message  assistant: The inner helper counted 4.  [ok]\n"
        "  #9    message  assistant: There are 4 files.  [ok]\n"
        "    ↳ subagent agent-cccc3333\n"  # started by no step: where its steps fall
    ) in shown


def test_markdown_quotes_helper_work_under_its_start(stored: dict[str, str]) -> None:
    text = run_postrun("export", LEAD, "--format", "markdown", env=stored).stdout
    start = text.index("**Tool** `spawn_agent` — ok\n\n↳ **subagent agent_1795976750621_u6sv2j**")
    assert text.index("> **Read** `/home/dev/work/h_subagents/svc/config.py` — ok") > start
    assert "> **Command** `cd svc && python3 main.py` — ok\n>\n> stdout:\n> ```text\n> 8080\n> ```" in text


def test_search_prints_who_did_it(stored: dict[str, str]) -> None:
    lines = run_postrun("search", "python3 main.py", "--type", "command", env=stored).stdout.splitlines()
    assert len(lines) == 1 and f"  {SUB2}  command ok  " in lines[0]
    hits = json.loads(run_postrun("search", "Audit", "--json", env=stored).stdout)
    assert {(hit["actor_id"], hit["actor_label"]) for hit in hits} == {("root", "lead")}


def test_json_export_and_sessions_include_helpers(stored: dict[str, str]) -> None:
    envelope = json.loads(run_postrun("export", LEAD, env=stored).stdout)
    assert [(a["id"], a["type"], a.get("parent_id")) for a in envelope["actors"]] == [
        ("root", "root", None),
        (SUB1, "subagent", "root"),
        (SUB2, "subagent", "root"),
    ]
    assert {step["actor_id"] for step in envelope["steps"]} == {"root", SUB1, SUB2}
    listed = {s["id"]: s for s in json.loads(run_postrun("sessions", "--json", env=stored).stdout)}
    assert listed[LEAD]["steps"] == 12 and listed[TEAM]["steps"] == 12
