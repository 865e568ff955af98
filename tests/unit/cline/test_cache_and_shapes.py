"""Properties: mapping with a cache equals mapping without; no input shape crashes the mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postrun.agents.cline import map_session
from postrun.errors import SourceError
from tests.unit.cline.kit import (
    ALL_ASKED,
    ALL_AUTO,
    T0,
    answer,
    assert_valid,
    call,
    default_manifest,
    files_for,
    files_with_document,
    item,
    message,
    remap,
    same_mapping,
)

PATCH = "*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b.py\n-y\n+z\n*** End Patch"
CALLS: list[tuple[str, Any, Any, bool | None]] = [
    (
        "run_commands",
        {"commands": ["ls", "false"]},
        [item("ls", "a\n[stderr]\nb"), item("false", "[Command exited with code 1]", success=False, error="x")],
        None,
    ),
    (
        "run_commands",
        {"command": "dev"},
        [item("dev", "[Command is still running. Output will continue in /t/o]\n.")],
        None,
    ),
    ("run_commands", ["a", "b", "c"], [item("a\nb", ""), item("c", "")], None),
    (
        "run_commands",
        {"commands": ["rm x"]},
        [item("rm x", "", success=False, error="requires approval in a TTY session")],
        None,
    ),
    ("read_files", {"files": [{"path": "/a", "start_line": 1, "end_line": 2}, "/b"]}, [item("/a:1-2", "1 | a")], None),
    (
        "editor",
        {"path": "/a", "old_text": "a", "new_text": "b"},
        '{"query": "edit:/a", "result": "ok", "success": true}',
        None,
    ),
    ("editor", {"path": "/a", "new_text": "b"}, '{"error": "User denied the tool execution"}', True),
    ("apply_patch", {"input": PATCH}, '{"query": "apply_patch", "result": "ok", "success": true}', None),
    ("search_codebase", {"queries": "x"}, [item("x", "found")], None),
    ("fetch_web_content", {"requests": [{"url": "u", "prompt": "p"}]}, '{"error": "AI_NoSuchToolError"}', True),
    ("ask_question", {"question": "?"}, "yes", None),
    ("github__create_issue", '{"title": "t"}', '{"content": []}', None),
]
IDS = st.sampled_from(["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", None])
CALL_IDS = st.sampled_from(["c0", "c1", "c2", "c3"])  # few: ids repeat like per-run call numbers
TIMES = st.sampled_from([None, T0, T0 + 1000, T0 + 500, T0 + 7000, 1.5e12])
TEXTS = st.sampled_from(["do it", "  ", "<mode_notice>n</mode_notice>go", "[SYSTEM] reminder", "Context summary: s"])


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["prompt", "synthetic", "assistant", "assistant", "result", "result"]))
    message_id, ts = draw(IDS), draw(TIMES)
    if kind == "prompt":
        mode = draw(st.sampled_from(["act", "plan", None]))
        text = draw(TEXTS)
        wrapped = f'<user_input mode="{mode}">{text}</user_input>' if mode else text
        return message(message_id, "user", [{"type": "text", "text": wrapped}], ts=ts)
    if kind == "synthetic":
        return message(message_id, "user", draw(TEXTS), ts=ts, metadata={"kind": "completion_reminder"})
    if kind == "result":
        name, _input, content, is_error = CALLS[draw(st.integers(0, len(CALLS) - 1))]
        return message(message_id, "user", [answer(draw(CALL_IDS), content, name=name, is_error=is_error)], ts=ts)
    blocks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        block_kind = draw(st.sampled_from(["text", "thinking", "call", "call", "image"]))
        if block_kind == "call":
            name, tool_input, _content, _error = CALLS[draw(st.integers(0, len(CALLS) - 1))]
            blocks.append(call(draw(CALL_IDS), name, tool_input))
        elif block_kind == "image":
            blocks.append({"type": "image", "data": "aGk=", "mediaType": "image/png"})
        else:
            blocks.append({"type": block_kind, block_kind: draw(TEXTS)})
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["metrics"] = {"inputTokens": 10, "outputTokens": 1, "cacheReadTokens": 0, "cacheWriteTokens": 0}
    if draw(st.integers(0, 9)) == 0:
        extra["metadata"] = {"displayRole": "error"}
    return message(message_id, "assistant", blocks, ts=ts, **extra)


CHECKPOINTS = st.sampled_from(
    [
        None,
        {"history": [{"runCount": 1, "createdAt": T0}, {"runCount": 2, "createdAt": T0 + 9000}]},
        {"history": [{"runCount": 2, "createdAt": T0 + 9000}]},
        {"history": [{"runCount": 1, "createdAt": T0}, {"runCount": 3, "createdAt": T0 + 9000}]},
    ]
)
APPROVALS = st.sampled_from([ALL_AUTO, ALL_ASKED, {"kind": "cli", "tool_auto_approve": True}])


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, Any]:
    """One rewrite of a session: mostly appends, sometimes anything else (one change each)."""
    kind = draw(st.sampled_from(["append", "append", "insert", "replace", "delete", "manifest", "approvals"]))
    if kind in ("append", "insert"):
        return kind, (draw(st.integers(0, 50)), draw(st.lists(messages(), min_size=1, max_size=3)))
    if kind == "replace":
        return kind, (draw(st.integers(0, 50)), draw(messages()))
    if kind == "delete":
        return kind, draw(st.integers(0, 50))
    if kind == "manifest":
        field = draw(st.sampled_from(["checkpoint", "ended", "cwd"]))
        if field == "checkpoint":
            return kind, {"metadata": {"checkpoint": draw(CHECKPOINTS)}}
        if field == "cwd":
            return kind, {"cwd": draw(st.sampled_from(["/home/dev/app", "/elsewhere"]))}
        ended = draw(st.booleans())
        return kind, {
            "status": "completed" if ended else "running",
            "ended_at": "2026-09-21T15:00:00Z" if ended else None,
        }
    return kind, draw(APPROVALS)


def _apply(transcript: list[dict[str, Any]], kind: str, change: Any) -> None:
    if kind == "append":
        transcript.extend(change[1])
    elif kind == "insert":
        position = change[0] % (len(transcript) + 1)
        transcript[position:position] = change[1]
    elif kind == "replace" and transcript:
        position, replacement = change
        transcript[position % len(transcript)] = replacement
    elif kind == "delete" and transcript:
        del transcript[change % len(transcript)]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.lists(messages(), max_size=12),
    checkpoint=CHECKPOINTS,
    changes=st.lists(edits(), min_size=1, max_size=6),
)
def test_mapping_with_the_cache_equals_mapping_without(
    start: list[dict[str, Any]], checkpoint: Any, changes: list[tuple[str, Any]]
) -> None:
    transcript = list(start)
    manifest = default_manifest(metadata={"checkpoint": checkpoint})
    approvals: dict[str, Any] = ALL_AUTO
    cache = remap(files_for(transcript, manifest), approvals, None)
    for kind, change in changes:
        if kind == "manifest":
            manifest = {key: value for key, value in {**manifest, **change}.items() if value is not None}
        elif kind == "approvals":
            approvals = change
        else:
            _apply(transcript, kind, change)
        cache = remap(files_for(transcript, manifest), approvals, cache)


def _prompt(message_id: str) -> dict[str, Any]:
    return message(message_id, "user", f'<user_input mode="act">{message_id}</user_input>')


SINGLE_CHANGES = {
    # Each rewrite changes one input of a later, unchanged message's steps and nothing else it sees.
    "call id numbering": (
        [
            _prompt("u1"),
            message("a1", "assistant", [call("x", "skills", {})]),
            message("a2", "assistant", [call("y", "skills", {})]),
        ],
        lambda t: t.__setitem__(1, message("a1", "assistant", [call("y", "skills", {})])),
        {},
    ),
    "answered call disappears": (
        [
            _prompt("u1"),
            message("a1", "assistant", [call("c0", "skills", {})]),
            message("r1", "user", [answer("c0", "x")]),
        ],
        lambda t: t.__setitem__(1, message("a1", "assistant", [{"type": "text", "text": "no call"}])),
        {},
    ),
    "prompt becomes synthetic": (
        [_prompt("u1"), _prompt("u2"), message("a2", "assistant", "x")],
        lambda t: t.__setitem__(1, message("u2", "user", "[SYSTEM] x")),
        {},
    ),
    "earlier time changes": (
        [_prompt("u1"), message("a1", "assistant", "x", ts=None)],
        lambda t: t.__setitem__(0, {**t[0], "ts": T0 + 60_000}),
        {},
    ),
    "segment of the open turn changes": (
        [_prompt("u1"), _prompt("u2"), message("a2", "assistant", "x"), _prompt("u3")],
        lambda t: None,
        {"history": [{"runCount": 1, "createdAt": T0}, {"runCount": 3, "createdAt": T0 + 9000}]},
    ),
}


@pytest.mark.parametrize("name", sorted(SINGLE_CHANGES))
def test_a_single_change_seen_only_through_the_context(name: str) -> None:
    transcript, rewrite, checkpoint = SINGLE_CHANGES[name]
    before = {"history": [{"runCount": 1, "createdAt": T0}, {"runCount": 2, "createdAt": T0 + 9000}]}
    cache = remap(files_for(transcript, default_manifest(metadata={"checkpoint": before})), ALL_AUTO, None)
    rewrite(transcript)
    after = default_manifest(metadata={"checkpoint": checkpoint or before})
    remap(files_for(transcript, after), ALL_AUTO, cache)


def test_cache_from_another_session_or_settings_is_not_reused() -> None:
    transcript = [
        message("u1", "user", "go"),
        message("a1", "assistant", [call("c1", "run_commands", ["ls"])], ts=T0 + 1),
    ]
    files = files_for(transcript, default_manifest())
    _, cache = map_session(files, ALL_AUTO)
    asked, _ = map_session(files, ALL_ASKED, cache)
    fresh, _ = map_session(files, ALL_ASKED)
    assert same_mapping(asked, fresh)
    assert asked.steps[1].record["decision"] == "accepted"


def test_unchanged_messages_reuse_their_rows() -> None:
    transcript = [message("u1", "user", "go"), message("a1", "assistant", [call("c1", "run_commands", ["ls"])])]
    first, cache = map_session(files_for(transcript, default_manifest()), ALL_AUTO)
    transcript.append(message("r1", "user", [answer("c1", [item("ls", "a")])]))
    second, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO, cache)
    assert second.steps[0] is first.steps[0]  # the prompt's row object itself: not rebuilt
    assert second.steps[1] is not first.steps[1]  # the call got its result
    assert second.steps[1].record["outcome"] == "ok"


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
BLOCK_KEYS = ["type", "text", "thinking", "id", "name", "input", "tool_use_id", "content", "is_error"]
MESSAGE_KEYS = ["id", "role", "ts", "content", "metadata", "metrics", "modelInfo"]


def _mutated(draw: st.DrawFn, base: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``base`` with a few fields replaced by any JSON value."""
    mutated = dict(base)
    for key in draw(st.lists(st.sampled_from(keys), max_size=2)):
        mutated[key] = draw(JSON)
    return mutated


@st.composite
def odd_messages(draw: st.DrawFn) -> Any:
    base = draw(messages())
    content = base["content"]
    if isinstance(content, list):
        base["content"] = [_mutated(draw, block, BLOCK_KEYS) if draw(st.booleans()) else block for block in content]
        if draw(st.booleans()):
            base["content"].append(_mutated(draw, {"type": draw(st.sampled_from(BLOCK_KEYS))}, BLOCK_KEYS))
    return _mutated(draw, base, MESSAGE_KEYS) if draw(st.booleans()) else base


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    transcript=st.lists(odd_messages(), max_size=8),
    document=st.dictionaries(st.sampled_from(["version", "agent", "origin"]), JSON, max_size=2),
    manifest=st.none() | st.dictionaries(st.sampled_from([*default_manifest(), "metadata", "model"]), JSON),
)
def test_any_shape_maps_to_valid_records_or_a_wrong_shape_error(
    transcript: list[Any], document: dict[str, Any], manifest: dict[str, Any] | None
) -> None:
    files = files_with_document({"messages": transcript, **document}, manifest)
    try:
        mapped, _ = map_session(files, ALL_AUTO)
    except SourceError as exc:
        assert exc.reason.startswith("wrong shape: messages"), exc.reason
        return
    assert_valid(mapped)
    json.dumps(mapped.turns)
