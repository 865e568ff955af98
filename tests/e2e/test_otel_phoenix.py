"""``postrun otel push`` into a real Arize Phoenix, read back through Phoenix's own REST API.

Recorded real sessions (Cline: failed commands; Cline: two helpers; Claude Code: two helpers)
are ingested and pushed by the real ``postrun``; Phoenix must hold one trace per session with
the span tree, names and attributes, ERROR on the failed steps, and nothing twice after the
same sessions are pushed again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from postrun.otel.mapping import trace_id_of
from tests.conftest import FIXTURES, isolated_environ, run_postrun
from tests.support.phoenix import phoenix_server, project_spans

FAILED, HELPERS = "1795976512762_vrqks", "1795976749765_vx695"
CLAUDE = "973c7bbe-87bd-4c67-a1d0-eb15e8e8c39a"
FAILED_CALLS = {"call_1_0_0#2", "call_1_0_0#3", "call_2_1_0#0"}  # ls does-not-exist, exit 3, false
CLINE_SESSIONS = [
    FIXTURES / "cline-real" / "b_run_commands" / "data" / "sessions" / FAILED,
    FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions" / HELPERS,
]
CLAUDE_TRANSCRIPT = (
    FIXTURES
    / "claude-code-real"
    / "e_subagents"
    / "claude"
    / "projects"
    / "-home-dev-work-e-subagents"
    / f"{CLAUDE}.jsonl"
)
WAIT_SECONDS = 120  # Phoenix inserts what it received in the background


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as base:
        yield base


@pytest.fixture(scope="module")
def environ(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    environ = {
        k: v for k, v in isolated_environ(tmp_path_factory.mktemp("postrun")).items() if not k.startswith("OTEL_")
    }
    for targets, agent in ((CLINE_SESSIONS, "cline"), ([CLAUDE_TRANSCRIPT], "claude-code")):
        done = run_postrun("ingest", "--agent", agent, *map(str, targets), env=environ)
        assert done.returncode == 0, done.stderr
    return environ


def _traces(base: str, wanted: int) -> dict[str, list[dict[str, Any]]]:
    """Phoenix's spans by trace id, once it holds at least ``wanted`` spans (bounded wait)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        spans = project_spans(base)
        if len(spans) >= wanted or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["context"]["trace_id"], []).append(span)
    return by_trace


def _pushed_spans(stdout: str) -> int:
    # "otel <url>: pushed 2 sessions (29 spans)"
    return int(stdout.rsplit("(", 1)[1].split()[0])


def test_sessions_arrive_as_genai_traces_and_a_second_push_duplicates_nothing(
    phoenix: str, environ: dict[str, str]
) -> None:
    endpoint = f"{phoenix}/v1/traces"
    first = run_postrun("otel", "push", FAILED, HELPERS, "--endpoint", endpoint, env=environ)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"otel {endpoint}: pushed 2 sessions (")
    sent = _pushed_spans(first.stdout)
    traces = _traces(phoenix, sent)
    assert sorted(traces) == sorted(f"{trace_id_of(s):032x}" for s in (FAILED, HELPERS))
    assert sum(map(len, traces.values())) == sent

    failed = _Tree(traces[f"{trace_id_of(FAILED):032x}"])
    root = failed.root
    assert root["name"] == "invoke_agent cline"
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert root["attributes"]["gen_ai.agent.name"] == "cline"
    assert root["attributes"]["gen_ai.agent.version"] == "3.0.65"
    assert root["attributes"]["gen_ai.conversation.id"] == FAILED
    assert root["attributes"]["gen_ai.request.model"] == "mock-model"
    assert root["attributes"]["gen_ai.usage.input_tokens"] == 3120
    assert root["attributes"]["gen_ai.usage.output_tokens"] == 150
    (turn,) = failed.children(root)
    assert turn["name"] == "turn 1"
    tools = failed.children(turn)
    assert [span["name"] for span in tools] == ["execute_tool command"] * 5
    for span in tools:
        attributes = span["attributes"]
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["gen_ai.tool.name"] == "command" and attributes["gen_ai.tool.type"] == "function"
        assert "gen_ai.tool.call.arguments" not in attributes  # content is opt-in
    errors = {span["attributes"]["gen_ai.tool.call.id"]: span for span in tools if span["status_code"] == "ERROR"}
    assert set(errors) == FAILED_CALLS
    assert {span["attributes"]["error.type"] for span in errors.values()} == {"cline_tool_error"}
    assert all(span["status_code"] == "UNSET" for span in tools if span not in errors.values())

    helpers = _Tree(traces[f"{trace_id_of(HELPERS):032x}"])
    (turn,) = helpers.children(helpers.root)
    spawns = [span for span in helpers.children(turn) if span["name"] == "execute_tool spawn_agent"]
    assert len(spawns) == 2
    beneath = {}
    for spawn in spawns:
        (agent,) = helpers.children(spawn)
        assert agent["name"] == "invoke_agent cline"
        assert agent["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        beneath[agent["attributes"]["gen_ai.agent.id"]] = [s["name"] for s in helpers.children(agent)]
    assert beneath == {
        "agent_1795976750621_u6sv2j": ["execute_tool read"],
        "agent_1795976750622_zikz6r": ["execute_tool command"],
    }

    # Again, and then a third session: once Phoenix shows the third, it has taken the second push.
    again = run_postrun("otel", "push", FAILED, HELPERS, "--endpoint", endpoint, env=environ)
    assert again.returncode == 0, again.stderr
    assert _pushed_spans(again.stdout) == sent
    claude = run_postrun("otel", "push", CLAUDE, "--endpoint", endpoint, env=environ)
    assert claude.returncode == 0, claude.stderr
    after = _traces(phoenix, sent + _pushed_spans(claude.stdout))
    claude_trace = f"{trace_id_of(CLAUDE):032x}"
    assert sorted(after) == sorted([*traces, claude_trace])
    assert {trace: len(spans) for trace, spans in after.items() if trace != claude_trace} == {
        trace: len(spans) for trace, spans in traces.items()
    }
    assert len({span["context"]["span_id"] for spans in after.values() for span in spans}) == sum(
        map(len, after.values())
    )
    claude_tree = _Tree(after[claude_trace])
    assert claude_tree.root["name"] == "invoke_agent claude-code"
    agents = [s for s in after[claude_trace] if s["name"] == "invoke_agent claude-code" and s is not claude_tree.root]
    assert len(agents) == 2
    assert all(claude_tree.parent(agent)["name"] == "execute_tool Agent" for agent in agents)


class _Tree:
    def __init__(self, spans: list[dict[str, Any]]) -> None:
        self.by_id = {span["context"]["span_id"]: span for span in spans}
        roots = [span for span in spans if not span.get("parent_id")]
        assert len(roots) == 1, [span["name"] for span in roots]
        self.root = roots[0]
        assert all(span["parent_id"] in self.by_id for span in spans if span is not self.root)

    def children(self, span: dict[str, Any]) -> list[dict[str, Any]]:
        found = [child for child in self.by_id.values() if child.get("parent_id") == span["context"]["span_id"]]
        return sorted(found, key=lambda child: (child["start_time"], child["attributes"].get("postrun.step.seq", 0)))

    def parent(self, span: dict[str, Any]) -> dict[str, Any]:
        return self.by_id[span["parent_id"]]
