"""Sessions of every agent as GenAI spans: real recorded sessions ingested into a real store,
read back as the push reads them, mapped."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from postrun.ingest.batches import ingest_targets
from postrun.otel.mapping import SpanRecord, session_spans, span_id_of, trace_id_of
from postrun.review.redact import Redactor
from postrun.store.db import Database
from postrun.store.query import load_envelope, session_details
from tests.conftest import FIXTURES
from tests.support.secret_samples import SAMPLES

CLINE_FAILED = "1795976512762_vrqks"  # three failed commands
CLINE_HELPERS = "1795976749765_vx695"  # two helpers, each started by a spawn_agent step
CLAUDE_HELPERS = "973c7bbe-87bd-4c67-a1d0-eb15e8e8c39a"
CODEX_HELPER = "01a2330d-8486-7383-9b2b-63e51f475249"
_CODEX_DAY = FIXTURES / "codex-real" / "d_subagent" / "sessions" / "2026" / "12" / "01"
_TARGETS: dict[str, list[Path]] = {
    "cline": [
        FIXTURES / "cline-real" / "b_run_commands" / "data" / "sessions" / CLINE_FAILED,
        FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions" / CLINE_HELPERS,
    ],
    "claude-code": [
        FIXTURES / "claude-code-real" / "e_subagents" / "claude" / "projects" / "-home-dev-work-e-subagents"
        / f"{CLAUDE_HELPERS}.jsonl"
    ],
    "codex": [_CODEX_DAY],
}  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("otel") / "postrun.db"
    for agent, targets in _TARGETS.items():
        report = ingest_targets(
            [str(t) for t in targets], db=db, default_root=db.parent, max_bytes=2**26, agent=agent, processes=0
        )
        assert not report.failures, report.failures
    return db


def _read(db: Path, session_id: str) -> tuple[dict[str, Any], Any]:
    with Database.open_reader(db) as database:
        return load_envelope(database, session_id), session_details(database, session_id)


def _spans(db: Path, session_id: str, *, content: bool = False, home: str | None = None) -> list[SpanRecord]:
    envelope, details = _read(db, session_id)
    return session_spans(
        envelope,
        model=details.model,
        provider=details.provider,
        helper_metrics=details.helper_metrics,
        content=content,
        redactor=Redactor(home=home),
    )


def _check_tree(spans: list[SpanRecord]) -> dict[int, SpanRecord]:
    """One trace, one root, every parent in it, every span inside its parent's times."""
    by_id = {span.span_id: span for span in spans}
    assert len(by_id) == len(spans), "span ids are unique"
    assert {span.trace_id for span in spans} == {spans[0].trace_id}
    roots = [span for span in spans if span.parent_id is None]
    assert roots == [spans[0]]
    for span in spans:
        assert span.start_ns <= span.end_ns
        if span.parent_id is not None:
            parent = by_id[span.parent_id]
            assert parent.start_ns <= span.start_ns and span.end_ns <= parent.end_ns, (span.name, parent.name)
    return by_id


def _tools(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [span for span in spans if span.attributes.get("gen_ai.operation.name") == "execute_tool"]


def _helpers(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [span for span in spans[1:] if span.attributes.get("gen_ai.operation.name") == "invoke_agent"]


def test_a_cline_session_with_failed_commands(store: Path) -> None:
    envelope, _ = _read(store, CLINE_FAILED)
    spans = _spans(store, CLINE_FAILED)
    by_id = _check_tree(spans)
    root = spans[0]
    assert root.name == "invoke_agent cline"
    assert root.trace_id == trace_id_of(CLINE_FAILED)
    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "cline",
        "gen_ai.agent.version": "3.0.65",
        "gen_ai.conversation.id": CLINE_FAILED,
        "gen_ai.usage.input_tokens": 3120,
        "gen_ai.usage.output_tokens": 150,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "postrun.usage.cost_usd": 0.0,
        "postrun.usage.api_requests": 3,
        "gen_ai.provider.name": "openai-compatible",
        "gen_ai.request.model": "mock-model",
    }
    assert (root.start_ns, root.end_ns) == (1795976512765 * 10**6, 1795976514873 * 10**6)
    (turn,) = [span for span in spans if span.name.startswith("turn ")]
    assert turn.parent_id == root.span_id and turn.attributes["postrun.turn.index"] == 1
    assert "gen_ai.input.messages" not in turn.attributes  # content is opt-in
    tools = _tools(spans)
    commands = [step for step in envelope["steps"] if step["type"] == "command"]
    assert [span.attributes["gen_ai.tool.call.id"] for span in tools] == [step["id"] for step in commands]
    for span, step in zip(tools, commands, strict=True):
        assert span.name == "execute_tool command"
        assert span.span_id == span_id_of(CLINE_FAILED, "step", step["id"])
        assert span.parent_id == turn.span_id and by_id[span.parent_id] is turn
        assert span.attributes["gen_ai.tool.name"] == "command"
        assert span.attributes["gen_ai.tool.type"] == "function"
        assert span.start_ns == _ns(step["at"])
        assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} & set(span.attributes)
    failed = [span for span in tools if span.error_type is not None]
    assert [span.attributes["gen_ai.tool.call.id"] for span in failed] == [
        step["id"] for step in commands if step["outcome"] == "failed"
    ]
    assert len(failed) == 3
    assert {span.attributes["error.type"] for span in failed} == {"cline_tool_error"}
    assert all(span.error_message is None for span in failed)  # the message is content
    assert all("error.type" not in span.attributes for span in tools if span not in failed)
    # A step ends where its actor's next later step starts: the parallel calls at 53.640 end at 54.217.
    assert tools[0].end_ns == _ns("2026-11-29T18:21:54.217Z")


def _ns(at: str) -> int:
    from postrun.otel.mapping import nanoseconds

    return nanoseconds(at)


@pytest.mark.parametrize(
    ("session_id", "kind", "spawner", "helpers"),
    [
        (CLINE_HELPERS, "cline", "spawn_agent", 2),
        (CLAUDE_HELPERS, "claude-code", "Agent", 2),
        (CODEX_HELPER, "codex", "spawn_agent", 1),
    ],
)  # fmt: skip
def test_helpers_sit_under_the_step_that_started_them(
    store: Path, session_id: str, kind: str, spawner: str | None, helpers: int
) -> None:
    envelope, details = _read(store, session_id)
    spans = _spans(store, session_id)
    by_id = _check_tree(spans)
    assert spans[0].name == f"invoke_agent {kind}"
    assert spans[0].attributes["gen_ai.conversation.id"] == session_id
    if details.model:
        assert spans[0].attributes["gen_ai.request.model"] == details.model
    found = _helpers(spans)
    assert len(found) == helpers
    starters = {
        raw["actor_id"]: step
        for step in envelope["steps"]
        if step["type"] == "other" and isinstance(raw := step["payload"].get("raw"), dict) and "actor_id" in raw
    }
    for helper in found:
        actor_id = str(helper.attributes["gen_ai.agent.id"])
        assert helper.name == f"invoke_agent {kind}"
        starter = by_id[helper.parent_id or 0]
        assert starter.attributes["gen_ai.tool.call.id"] == starters[actor_id]["id"]
        if spawner is not None:
            assert starter.name == f"execute_tool {spawner}"
        own = [step["id"] for step in envelope["steps"] if step["actor_id"] == actor_id and step["type"] != "message"]
        beneath = [span.attributes["gen_ai.tool.call.id"] for span in _tools(spans) if span.parent_id == helper.span_id]
        assert sorted(beneath) == sorted(own) and own
        usage = details.helper_metrics.get(actor_id)
        if usage:
            assert helper.attributes["gen_ai.usage.output_tokens"] == usage["tokens"]["output"]
    tool_ids = [span.attributes["gen_ai.tool.call.id"] for span in _tools(spans)]
    assert sorted(tool_ids) == sorted(step["id"] for step in envelope["steps"] if step["type"] != "message")


def test_a_codex_helper_failure_is_an_error_span(store: Path) -> None:
    envelope, _ = _read(store, CODEX_HELPER)
    failed = [step["id"] for step in envelope["steps"] if step["outcome"] == "failed"]
    assert failed, "the case has a failing command"
    spans = _tools(_spans(store, CODEX_HELPER))
    assert sorted(str(span.attributes["gen_ai.tool.call.id"]) for span in spans if span.error_type) == sorted(failed)


def test_the_same_session_maps_to_the_same_ids(store: Path) -> None:
    first, again = _spans(store, CLINE_HELPERS), _spans(store, CLINE_HELPERS, content=True)
    assert [(s.trace_id, s.span_id, s.parent_id) for s in first] == [
        (s.trace_id, s.span_id, s.parent_id) for s in again
    ]
    other = _spans(store, CLINE_FAILED)
    assert other[0].trace_id != first[0].trace_id
    assert not {s.span_id for s in other} & {s.span_id for s in first}


def test_content_is_opt_in_and_redacted(store: Path) -> None:
    envelope, details = _read(store, CLINE_FAILED)
    secret, line = SAMPLES["aws_key"]
    changed = copy.deepcopy(envelope)
    command = next(step for step in changed["steps"] if step["type"] == "command")
    command["payload"]["stdout"] = line + "\n"
    spans = session_spans(changed, content=True, redactor=Redactor(home="/home/dev"))
    text = json.dumps([dict(span.attributes) for span in spans]) + json.dumps([s.error_message for s in spans])
    assert secret not in text and "[REDACTED:aws_key]" in text
    assert "/home/dev/" not in text and "~/work/b_run_commands" in text
    tool = next(span for span in spans if span.attributes.get("gen_ai.tool.call.id") == command["id"])
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {
        "command": command["payload"]["command"],
        "cwd": "~/work/b_run_commands",
    }
    assert json.loads(str(tool.attributes["gen_ai.tool.call.result"]))["stdout"].startswith(
        "aws_access_key_id = [REDACTED"
    )
    (turn,) = [span for span in spans if span.name.startswith("turn ")]
    assert json.loads(str(turn.attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "Check the repo state and run the checks."}]}
    ]
    failed = [span for span in spans if span.error_type]
    assert {span.error_message for span in failed} >= {"Command exited with code 2"}
    plain = session_spans(changed, content=False, redactor=Redactor(home="/home/dev"))
    assert "aws_access_key_id" not in json.dumps([dict(span.attributes) for span in plain])
    del details


def test_the_model_and_provider_pass_the_redactor_too(store: Path) -> None:
    envelope, _ = _read(store, CLINE_FAILED)
    token = SAMPLES["github_token"][0]
    spans = session_spans(envelope, model=f"custom/{token}", provider=f"p {token}", redactor=Redactor())
    root = spans[0].attributes
    assert root["gen_ai.request.model"] == "custom/[REDACTED:github_token]"
    assert root["gen_ai.provider.name"] == "p [REDACTED:github_token]"


def test_an_open_session_and_a_helper_without_its_starter(store: Path) -> None:
    envelope, _ = _read(store, CLINE_HELPERS)
    changed = copy.deepcopy(envelope)
    del changed["session"]["ended_at"]
    changed["steps"] = [step for step in changed["steps"] if step["id"] != "call_1_0_0#0"]  # the first spawn step
    spans = session_spans(changed, redactor=Redactor())
    _check_tree(spans)
    helper = next(s for s in _helpers(spans) if s.attributes["gen_ai.agent.id"] == "agent_1795976750621_u6sv2j")
    assert helper.parent_id == spans[0].span_id  # under its parent actor, the root
    last = max(step["at"] for step in changed["steps"])
    assert spans[0].end_ns == _ns(last)
