"""Session, turns, messages and ordering of the Cline mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest

from postrun.agents.cline import map_session
from postrun.errors import SourceError
from tests.unit.cline.kit import (
    ALL_AUTO,
    SESSION_ID,
    STARTED,
    T0,
    answer,
    call,
    default_manifest,
    files_for,
    files_with_document,
    item,
    mapped_session,
    message,
    prompt,
    steps_by_id,
)


def test_prompt_text_mode_and_turn() -> None:
    text = '<user_input mode="plan"><mode_notice>The user switched to plan mode.</mode_notice>\n  Plan it </user_input>'
    mapped = mapped_session([message("u1", "user", [{"type": "text", "text": text}])])
    assert steps_by_id(mapped)["u1#0"]["payload"] == {"role": "user", "text": "Plan it"}
    assert mapped.turns == [
        {
            "id": "turn:1",
            "session_id": SESSION_ID,
            "segment_index": 0,
            "actor_id": "root",
            "index": 1,
            "prompt_id": "u1",
            "mode": "plan",
            "started_at": "2026-09-21T14:13:20.000Z",
            "step_ids": ["u1#0"],
        }
    ]


def test_unwrapped_prompt_opens_a_turn_without_mode() -> None:
    mapped = mapped_session([prompt("u1", "  <task>fix it</task>\n", mode=None)])
    assert steps_by_id(mapped)["u1#0"]["payload"] == {"role": "user", "text": "<task>fix it</task>"}
    assert "mode" not in mapped.turns[0]
    assert mapped.turns[0]["prompt_id"] == "u1"


def test_mode_is_kept_as_is() -> None:
    mapped = mapped_session([prompt("u1", "go", mode="yolo")])
    assert mapped.turns[0]["mode"] == "yolo"


SYNTHETIC = [
    ({"kind": "compaction_summary"}, "Context summary: we did things"),
    ({"displayRole": "system"}, '<hook_context source="PreToolUse">x</hook_context>'),
    ({"displayRole": "status"}, "status text"),
    ({"displayRole": "error"}, "something failed"),
    ({"userRunSpan": 0}, "[SYSTEM] This run is not complete until you call submit."),
    (None, "[SYSTEM] This run is not complete."),
    (None, '<hook_context source="PostToolUse" tool_name="x">ok</hook_context>'),
    (None, "[TASK RESUMPTION] This task was interrupted."),
    (None, "Context summary: earlier work"),
    (None, "Warning: this is a legacy conversation, which means tool names may have changed."),
    (None, "The user approved switching to act mode. Continue with the approved plan now."),
    (
        None,
        '<user_input mode="act">The user approved switching to act mode. '
        "Continue with the approved plan now.</user_input>",
    ),
    (None, '<user_input mode="act">[TASK RESUMPTION] Please continue where you left off.</user_input>'),
]


@pytest.mark.parametrize(("metadata", "text"), SYNTHETIC)
def test_synthetic_user_messages_are_system_steps_that_open_no_turn(metadata: dict[str, Any] | None, text: str) -> None:
    extra = {"metadata": metadata} if metadata is not None else {}
    mapped = mapped_session(
        [
            prompt("u1", "go"),
            message("s1", "user", [{"type": "text", "text": text}], ts=T0 + 10, **extra),
            message("a1", "assistant", [{"type": "text", "text": "ok"}], ts=T0 + 20),
        ]
    )
    steps = steps_by_id(mapped)
    expected_text = text.removeprefix('<user_input mode="act">').removesuffix("</user_input>")
    assert steps["s1#0"]["payload"] == {"role": "system", "text": expected_text}
    assert steps["s1#0"]["turn_id"] == "turn:1"
    assert [turn["id"] for turn in mapped.turns] == ["turn:1"]


@pytest.mark.parametrize(
    "typed", ["Context summary: the parser is fixed. Now add tests.", "[SYSTEM] prompt", "<hook_context"]
)
def test_a_wrapped_prompt_beginning_like_a_synthetic_mark_is_typed(typed: str) -> None:
    # Only the resumption prompt is wrapped when Cline injects it: the other marks inside the
    # wrapper are the start of what a person typed.
    mapped = mapped_session(
        [message("u1", "user", [{"type": "text", "text": f'<user_input mode="act">{typed}</user_input>'}])]
    )
    assert [turn["id"] for turn in mapped.turns] == ["turn:1"]
    assert steps_by_id(mapped)["u1#0"]["payload"]["role"] == "user"


def test_metadata_without_synthetic_marks_is_a_real_prompt() -> None:
    mapped = mapped_session(
        [message("u1", "user", [{"type": "text", "text": "[SYSTEM] typed by a person"}], metadata={"userRunSpan": 1})]
    )
    assert steps_by_id(mapped)["u1#0"]["payload"]["role"] == "user"
    assert len(mapped.turns) == 1


def test_steps_before_the_first_prompt_belong_to_turn_zero() -> None:
    mapped = mapped_session(
        [
            message("s0", "user", "Context summary: earlier work", ts=T0 - 5000, metadata={"kind": "compaction"}),
            message("a0", "assistant", [{"type": "text", "text": "resuming"}], ts=T0 - 4000),
            prompt("u1", "next"),
        ]
    )
    turn_zero, turn_one = mapped.turns
    assert turn_zero == {
        "id": "turn:0",
        "session_id": SESSION_ID,
        "segment_index": 0,
        "actor_id": "root",
        "index": 0,
        "started_at": "2026-09-21T14:13:15.000Z",
        "step_ids": ["s0#0", "a0#0"],
    }
    assert turn_one["step_ids"] == ["u1#0"]


def test_empty_user_text_opens_no_turn() -> None:
    mapped = mapped_session(
        [message("u1", "user", [{"type": "text", "text": '<user_input mode="act"> </user_input>'}])]
    )
    assert [turn["id"] for turn in mapped.turns] == ["turn:0"]
    assert steps_by_id(mapped)["u1#0"]["payload"] == {"role": "user", "text": ""}


def test_assistant_text_thinking_and_errors() -> None:
    mapped = mapped_session(
        [
            prompt("u1", "go"),
            message(
                "a1",
                "assistant",
                [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "text", "text": '<user_input mode="act">not unwrapped</user_input>'},
                    {"type": "thinking", "summary": "no text"},
                ],
            ),
            message(
                "e1",
                "assistant",
                [{"type": "text", "text": "API request failed: 529"}],
                metadata={"displayRole": "error"},
            ),
        ]
    )
    steps = steps_by_id(mapped)
    assert steps["a1#0"]["payload"] == {"role": "thinking", "text": "hmm"}
    assert steps["a1#1"]["payload"] == {
        "role": "assistant",
        "text": '<user_input mode="act">not unwrapped</user_input>',
    }
    assert steps["a1#2"]["payload"] == {"role": "thinking"}
    for step_id in ("a1#0", "a1#1"):
        assert (steps[step_id]["decision"], steps[step_id]["outcome"]) == ("n/a", "ok")
    error = steps["e1#0"]
    assert error["payload"] == {"role": "error", "text": "API request failed: 529"}
    assert error["outcome"] == "failed"
    assert error["error"] == {"type": "cline_error", "message": "API request failed: 529"}


def test_other_blocks_become_other_steps() -> None:
    blocks = [
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "image", "data": "aGk=", "mediaType": "image/png"},
        {"type": "file", "path": "/a.txt", "content": "x"},
        {"type": "media", "media": {"id": "m"}},
        {"type": "brand_new", "x": 1},
        {"no_type": True},
        {"type": "tool_use", "name": "editor", "input": {}},  # no id: nothing can answer it
        {"type": "tool_result", "tool_use_id": "never-called", "content": "orphan"},
    ]
    mapped = mapped_session([prompt("u1", "go"), message("a1", "assistant", blocks)])
    steps = steps_by_id(mapped)
    names = [steps[f"a1#{i}"]["payload"]["tool_name"] for i in range(len(blocks))]
    assert names == [
        "block:redacted_thinking",
        "block:image",
        "block:file",
        "block:media",
        "block:brand_new",
        "block:unknown",
        "block:tool_use",
        "block:tool_result",
    ]
    for i, block in enumerate(blocks):
        assert steps[f"a1#{i}"]["payload"]["raw"] == {"block": block}
        assert steps[f"a1#{i}"]["type"] == "other"
        assert steps[f"a1#{i}"]["decision"] == "n/a"


def test_order_follows_the_conversation_not_the_timestamps() -> None:
    mapped = mapped_session(
        [
            prompt("u1", "go", ts=T0),
            message(
                "a1",
                "assistant",
                [{"type": "text", "text": "both"}, call("c1", "skills", {}), call("c2", "skills", {})],
                ts=T0 + 1000,
            ),
            message("r2", "user", [answer("c2", "second")], ts=T0 + 3000),
            message("r1", "user", [answer("c1", "first")], ts=T0 + 2000),
            message("a2", "assistant", [{"type": "text", "text": "done"}], ts=T0 + 500),
        ]
    )
    assert [(row.id, row.record["seq"], row.record["at"]) for row in mapped.steps] == [
        ("u1#0", 0, "2026-09-21T14:13:20.000Z"),
        ("a1#0", 1, "2026-09-21T14:13:21.000Z"),
        ("c1#0", 2, "2026-09-21T14:13:21.000Z"),
        ("c2#0", 3, "2026-09-21T14:13:21.000Z"),
        ("a2#0", 4, "2026-09-21T14:13:20.500Z"),
    ]


def test_messages_without_ts_take_the_previous_time_else_the_start() -> None:
    mapped = mapped_session(
        [
            message("m0", "user", "Context summary: x", ts=None, metadata={"kind": "compaction"}),
            prompt("u1", "go", ts=T0),
            message("a1", "assistant", "answer", ts=None),
            message("a2", "assistant", "more", ts="not a number"),
        ]
    )
    ats = {row.id: row.record["at"] for row in mapped.steps}
    assert ats == {
        "m0#0": STARTED,
        "u1#0": "2026-09-21T14:13:20.000Z",
        "a1#0": "2026-09-21T14:13:20.000Z",
        "a2#0": "2026-09-21T14:13:20.000Z",
    }


def test_roles_other_than_user_and_assistant_are_skipped() -> None:
    mapped = mapped_session([prompt("u1", "go"), message("t1", "tool", "x"), message("s1", "system", "y")])
    assert [row.id for row in mapped.steps] == ["u1#0"]


def test_string_content_and_missing_ids() -> None:
    mapped = mapped_session(
        [message(None, "user", '<user_input mode="act">hi</user_input>'), message(None, "assistant", None)]
    )
    assert [row.id for row in mapped.steps] == ["#0#0"]
    assert "prompt_id" not in mapped.turns[0]


def test_repeated_ids_stay_unique_and_results_answer_the_latest_call() -> None:
    """Some models number calls per run (call_0 every time)."""
    mapped = mapped_session(
        [
            prompt("u1", "one"),
            message("a1", "assistant", [call("call_0", "skills", {"n": 1})]),  # never answered
            prompt("u1", "two", ts=T0 + 10),
            message("a2", "assistant", [call("call_0", "skills", {"n": 2})]),
            message("r2", "user", [answer("call_0", "answer two")]),
            message("a#3", "assistant", "text"),
        ]
    )
    steps = steps_by_id(mapped)
    assert list(steps) == ["u1#0", "call_0#0", "u1#2#0", "call_0#2#0", "a%233#0"]
    assert steps["call_0#0"]["outcome"] == "pending"
    assert steps["call_0#2#0"]["payload"]["raw"] == {"input": {"n": 2}, "result": "answer two"}
    assert [turn["prompt_id"] for turn in mapped.turns] == ["u1", "u1"]


def test_session_record() -> None:
    manifest = default_manifest(
        status="completed",
        ended_at="2026-09-21T15:00:00.000Z",
        workspace_root="/home/dev/repo",
        cwd="/home/dev/repo/sub",
        metadata={
            "git": {"url": "git@x:y.git", "branch": "main"},
            "title": "T",
            "sessionHistoryOrigin": {"version": "4.0"},
        },
        model="m1",
        provider="p1",
    )
    mapped = mapped_session(
        [prompt("u1", "go")], manifest=manifest, document={"origin": {"version": "4.1.17"}, "version": 1}
    )
    assert mapped.agent == "cline"
    assert mapped.session == {
        "id": SESSION_ID,
        "agent": {"kind": "cline", "version": "4.1.17", "format_version": "1"},
        "workspace": {"root": "/home/dev/repo", "repo": "git@x:y.git"},
        "started_at": STARTED,
        "ended_at": "2026-09-21T15:00:00.000Z",
        "source": f"/data/sessions/{SESSION_ID}",
    }
    assert mapped.actors == [{"id": "root", "type": "root", "label": "lead"}]
    assert (mapped.extras.model, mapped.extras.provider) == ("m1", "p1")
    assert (mapped.extras.agent_title, mapped.extras.agent_status, mapped.extras.git_branch) == (
        "T",
        "completed",
        "main",
    )
    assert mapped.approvals == ALL_AUTO
    assert [source.path for source in mapped.source_files] == [
        f"/data/sessions/{SESSION_ID}/{SESSION_ID}.messages.json",
        f"/data/sessions/{SESSION_ID}/{SESSION_ID}.json",
    ]


def test_session_fallbacks() -> None:
    manifest = {"metadata": {"sessionHistoryOrigin": {"version": "3.0.65"}}, "ended_at": "yesterday", "cwd": "/w"}
    messages = [
        prompt("u1", "go", ts=T0 + 5000),
        message("a1", "assistant", "x", ts=T0 + 1000, modelInfo={"id": "m2", "provider": "p2"}),
    ]
    mapped = mapped_session(messages, manifest=manifest, document={"agent": "", "version": "2"})
    assert mapped.session["agent"] == {"kind": "cline", "version": "3.0.65", "format_version": "2"}
    assert mapped.session["workspace"] == {"root": "/w"}
    assert mapped.session["started_at"] == "2026-09-21T14:13:21.000Z"  # the earliest message
    assert "ended_at" not in mapped.session  # not a valid time: as if absent
    assert "metrics" not in mapped.session
    assert mapped.actors[0]["label"] == "cline"
    assert (mapped.extras.model, mapped.extras.provider, mapped.extras.agent_status) == ("m2", "p2", None)


def test_without_manifest_or_times_the_file_mtime_is_the_start() -> None:
    files = files_for([message("a1", "assistant", "x", ts=None)], None, mtime_ns=1_790_000_000_123_456_789)
    mapped, _ = map_session(files, ALL_AUTO)
    assert mapped.session["started_at"] == "2026-09-21T14:13:20.123Z"
    assert mapped.session["agent"]["version"] == "unknown"
    assert mapped.session["workspace"] == {"root": ""}


def test_bare_list_document() -> None:
    mapped, _ = map_session(files_with_document([prompt("u1", "go")], default_manifest()), ALL_AUTO)
    assert [row.id for row in mapped.steps] == ["u1#0"]
    assert "format_version" not in mapped.session["agent"]


def test_metrics_are_summed_as_stored() -> None:
    metrics_a = {"inputTokens": 1000, "outputTokens": 10, "cacheReadTokens": 800, "cacheWriteTokens": 100, "cost": 0.01}
    metrics_b = {"inputTokens": 2000, "outputTokens": 20, "cacheReadTokens": 0, "cacheWriteTokens": 0}
    mapped = mapped_session(
        [
            prompt("u1", "go", ts=T0),
            message("a1", "assistant", "x", metrics=metrics_a),
            message("a2", "assistant", "y", metrics=metrics_b),
            message("a3", "assistant", "z"),
            message("a4", "assistant", "w", metrics={"inputTokens": "odd", "cost": -1}),
            message("u2", "user", "not counted", metrics=metrics_a, metadata={"kind": "x"}),
        ]
    )
    assert mapped.session["metrics"] == {
        "cost_usd": 0.01,
        "api_requests": 3,
        "tokens": {"input": 3000, "output": 30, "cache_read": 800, "cache_creation": 100},
    }


def test_counts_and_costs_no_store_can_hold_are_ignored_and_totals_capped() -> None:
    near_cap = 2**53 - 10
    odd = {"inputTokens": 2**64 - 1, "outputTokens": 1e300, "cacheReadTokens": near_cap, "cost": 1e308}
    mapped = mapped_session(
        [prompt("u1", "go", ts=T0), *(message(f"a{i}", "assistant", "x", metrics=odd) for i in (1, 2))]
    )
    assert mapped.session["metrics"] == {
        "cost_usd": 0.0,
        "api_requests": 2,
        "tokens": {"input": 0, "output": 0, "cache_read": 2**53 - 1, "cache_creation": 0},
    }


@pytest.mark.parametrize(
    ("document", "path", "what"),
    [
        ({"version": 1}, "messages", "required"),
        ({"messages": {"a": 1}}, "messages", "expected a list"),
        (42, "top level", "expected an object or a list"),
        ({"messages": [prompt("u1", "go"), "text"]}, "messages[1]", "expected an object"),
        ({"messages": [message("u1", "user", 42)]}, "messages[0].content", "expected a list or a string"),
        ({"messages": [message("u1", "user", ["text"])]}, "messages[0].content[0]", "expected an object"),
    ],
)
def test_wrong_shapes_are_source_errors(document: Any, path: str, what: str) -> None:
    files = files_with_document(document, default_manifest())
    with pytest.raises(SourceError) as caught:
        map_session(files, ALL_AUTO)
    assert caught.value.where == str(files.location.messages)
    assert caught.value.reason == f"wrong shape: {path}: {what}"


def test_too_deep_to_store_is_a_wrong_shape() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    files = files_for(
        [prompt("u1", "go"), message("a1", "assistant", [call("c1", "skills", deep)])], default_manifest()
    )
    with pytest.raises(SourceError, match=r"wrong shape: messages\[1\]"):
        map_session(files, ALL_AUTO)


def test_segments_from_checkpoint_run_counts() -> None:
    checkpoint = {
        "history": [
            {"ref": "a", "createdAt": T0 + 100, "runCount": 1},
            {"ref": "b", "createdAt": T0 + 3_600_000, "runCount": 3},
        ]
    }
    manifest = default_manifest(metadata={"checkpoint": checkpoint}, ended_at="2026-09-21T16:00:00.000Z")
    mapped = mapped_session(
        [
            message("s0", "user", "Context summary: x", metadata={"kind": "compaction"}),
            prompt("u1", "one"),
            prompt("u2", "two"),
            prompt("u3", "three"),
            message("a3", "assistant", "x"),
            prompt("u4", "four"),
        ],
        manifest=manifest,
    )
    sources = [
        f"/data/sessions/{SESSION_ID}/{SESSION_ID}.messages.json",
        f"/data/sessions/{SESSION_ID}/{SESSION_ID}.json",
    ]
    assert mapped.segments == [
        {
            "index": 0,
            "start_reason": "start",
            "started_at": STARTED,
            "ended_at": "2026-09-21T15:13:20.000Z",
            "source_files": sources,
        },
        {
            "index": 1,
            "start_reason": "resume",
            "started_at": "2026-09-21T15:13:20.000Z",
            "ended_at": "2026-09-21T16:00:00.000Z",
            "source_files": sources,
        },
    ]
    assert {turn["id"]: turn["segment_index"] for turn in mapped.turns} == {
        "turn:0": 0,
        "turn:1": 0,
        "turn:2": 0,
        "turn:3": 1,
        "turn:4": 1,
    }
    assert {row.id: row.record["segment_index"] for row in mapped.steps} == {
        "s0#0": 0,
        "u1#0": 0,
        "u2#0": 0,
        "u3#0": 1,
        "a3#0": 1,
        "u4#0": 1,
    }


def test_pending_calls_fail_once_the_session_ended() -> None:
    messages = [prompt("u1", "go"), message("a1", "assistant", [call("c1", "run_commands", {"commands": ["sleep 9"]})])]
    open_session = mapped_session(messages)
    step = steps_by_id(open_session)["c1#0"]
    assert (step["outcome"], step["content_status"], "error" in step) == ("pending", "reference_only", False)
    assert step["payload"] == {"command": "sleep 9", "cwd": "/home/dev/app"}
    ended = mapped_session(messages, manifest=default_manifest(status="cancelled", ended_at="2026-09-21T15:00:00Z"))
    step = steps_by_id(ended)["c1#0"]
    assert (step["outcome"], step["content_status"]) == ("failed", "reference_only")
    assert step["error"] == {"type": "cline_tool_error", "message": "no result recorded; session ended (cancelled)"}
    assert step["payload"] == {"command": "sleep 9", "cwd": "/home/dev/app"}


@pytest.mark.parametrize(
    "error",
    [
        'Tool "run_commands" requires approval in a TTY session',
        'Tool "run_commands" was denied by user',  # a person's "no" at an older CLI's prompt
    ],
)
@pytest.mark.parametrize("shape", ["failed item", "whole call"])
def test_cli_session_showing_an_approval_refusal_ran_with_approval_on(error: str, shape: str) -> None:
    cli = {"kind": "cli", "tool_auto_approve": True, "settings": "missing"}
    # A batched tool's failed item, or a tool's whole result as one JSON text (`{"error": …}`).
    refusal = item("rm -rf x", "", success=False, error=error) if shape == "failed item" else None
    messages = [
        prompt("u1", "go"),
        message(
            "a1", "assistant", [call("c1", "editor", {"path": "/a", "new_text": "x"}), call("c2", "read_files", "/a")]
        ),
        message("r1", "user", [answer("c1", '{"query": "edit:/a", "result": "ok", "success": true}')]),
        message("r2", "user", [answer("c2", [item("/a", "1 | x")])]),
    ]
    quiet = steps_by_id(mapped_session(messages, approvals=cli))
    assert (quiet["c1#0"]["decision"], quiet["c2#0"]["decision"]) == ("auto", "auto")
    refused = [
        *messages,
        message("a2", "assistant", [call("c3", "run_commands", ["rm -rf x"])]),
        message(
            "r3",
            "user",
            [answer("c3", json.dumps({"error": error}), is_error=True) if refusal is None else answer("c3", [refusal])],
        ),
    ]
    steps = steps_by_id(mapped_session(refused, approvals=cli))
    assert (steps["c1#0"]["decision"], steps["c2#0"]["decision"], steps["c3#0"]["decision"]) == (
        "accepted",
        "auto",
        "rejected",
    )
    # The rule is the CLI's: a VS Code session keeps its settings.
    vscode = steps_by_id(mapped_session(refused, approvals=ALL_AUTO))
    assert vscode["c1#0"]["decision"] == "auto"


def test_every_step_carries_the_common_fields() -> None:
    mapped = mapped_session([prompt("u1", "go")])
    record = mapped.steps[0].record
    assert record["session_id"] == SESSION_ID
    assert record["actor_id"] == "root"
    assert record["channels"] == ["conversation"]
    assert record["flags"] == []
    assert record["content_status"] == "inline"
