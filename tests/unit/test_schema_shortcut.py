"""The plain checks that spare mapped steps the models accept only what the models accept."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from postrun import schema
from postrun.schema import models, plain
from tests.support.builders import command_step, message_step, session_record
from tests.unit.cline.kit import CASES, map_case_dir

_EDIT = {**message_step(2, ""), "type": "edit", "payload": {"path": "src/a.py", "is_full_write": False}}
_READ = {**message_step(3, ""), "type": "read", "payload": {"path": "a.py", "range": [1, 9]}}
_OTHER = {**message_step(4, ""), "type": "other", "payload": {"tool_name": "mcp", "raw": {"input": {"q": 1}}}}
_FLAG = {"kind": "failed", "severity": "info", "reason": "exit 1"}
VALID = [message_step(0, "hi"), command_step(1, "false", "", exit_code=1), _EDIT, _READ, _OTHER]

# Values that break a field one way or another: wrong types, nulls, bools for ints, empties,
# lone surrogates (refused by the constrained strings only), huge ints, bad times.
_ODD = st.sampled_from(
    [None, True, False, 0, -1, 2**70, 1.5, "", "x", "\ud800", "é", "turn:1", "2026-09-21T14:13:20Z",
     "2026-09-21 14:13:20", "inline", "warn", "conversation", [], ["x"], [None], [1, 2], [1, True], {},
     {"type": "t", "message": "m"}, {"type": "", "message": "m"}, dict(_FLAG), {**_FLAG, "severity": "high"},
     [dict(_FLAG)], [{**_FLAG, "extra": 1}], {"q": 1}, {1: "x"}, {"\ud800": 1}, {"": 1}]
)  # fmt: skip


def _keys(record: dict[str, Any]) -> st.SearchStrategy[str]:
    nested = [key for key in ("payload", "error") if isinstance(record.get(key), dict)]
    return st.sampled_from([*record, "extra", "error", *(f"{key}.{k}" for key in nested for k in record[key])]) | (
        st.sampled_from([f"payload.{k}" for k in ("text", "stdout", "exit_code", "path", "range", "raw")])
    )


@st.composite
def _steps(draw: st.DrawFn) -> dict[str, Any]:
    record = copy.deepcopy(draw(st.sampled_from(VALID)))  # drawn values are shared: never change them
    for _ in range(draw(st.integers(0, 3))):
        key = draw(_keys(record))
        change = draw(st.sampled_from(["set", "delete"]))
        holder, _, name = key.rpartition(".")
        target = record[holder] if holder and isinstance(record.get(holder), dict) else record
        name = name or key
        if change == "delete":
            target.pop(name, None)
        else:
            target[name] = copy.deepcopy(draw(_ODD))
    if draw(st.booleans()):
        record["type"] = draw(st.sampled_from(["command", "edit", "read", "message", "other", "Other", "x"]))
    return record


@settings(max_examples=3000, deadline=None)
@given(_steps())
def test_a_step_the_plain_checks_accept_is_one_the_models_accept(step: dict[str, Any]) -> None:
    if schema.plainly_valid_step(step):
        assert schema.model_problems("step", step) == []
    assert schema.record_problems("step", step) == (
        [] if schema.plainly_valid_step(step) else schema.model_problems("step", step)
    )


def test_every_step_mapped_from_the_fixtures_takes_the_shortcut() -> None:
    steps = [row.record for case in CASES for mapped in _mapped(case / "data") for row in mapped.steps]
    assert len(steps) > 100
    assert [step["id"] for step in steps if not schema.plainly_valid_step(step)] == []
    assert all(schema.model_problems("step", step) == [] for step in steps)
    flagged = {**steps[0], "flags": [dict(_FLAG)]}
    assert schema.plainly_valid_step(flagged)


def _mapped(data: Path) -> list[Any]:
    mapped, _log = map_case_dir(data)
    return list(mapped.values())


_TIME = "2026-09-21T14:13:19.500Z"


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_TIME) - 1), st.sampled_from("0123456789²٠:-.TZz+ ")), max_size=3))
def test_a_time_the_quick_check_takes_is_one_the_full_check_takes(changes: list[tuple[int, str]]) -> None:
    chars = list(_TIME)
    for position, char in changes:
        chars[position] = char
    value = "".join(chars)
    try:
        schema.check_timestamp(value)
    except ValueError:
        valid = False
    else:
        valid = True
    assert schema.is_timestamp(value) is valid


_TOKENS = dict.fromkeys(("input", "output", "cache_read", "cache_creation"), 3)
_METRICS = {"cost_usd": 0.5, "api_requests": 2, "tokens": _TOKENS}
_RECORDS: dict[str, dict[str, Any]] = {
    "session": {
        **session_record(),
        "workspace": {"root": "/w", "repo": "git@x"},
        "ended_at": "2026-09-21T15:00:00+02:00",
        "metrics": _METRICS,
    },
    "segment": {"index": 0, "start_reason": "start", "started_at": _TIME, "ended_at": _TIME, "source_files": ["a"]},
    "actor": {"id": "h", "parent_id": "root", "type": "subagent", "label": "task"},
    "turn": {
        **dict(id="turn:1", session_id="s", segment_index=0, actor_id="root", index=1, prompt_id="p", mode="act"),
        **dict(started_at=_TIME, step_ids=["a", "b"]),
    },
}  # fmt: skip
_NESTED = ("agent", "workspace", "metrics", "metrics.tokens")
_ODD_NUMBERS = st.sampled_from([dict(_METRICS), 0.0, -0.0, -1.5, float("nan"), float("inf"), 2.5])


def _record_keys(record: dict[str, Any]) -> list[str]:
    keys = [*record, "extra", "ended_at", "metrics", "parent_id", "label", "prompt_id", "mode", "step_ids"]
    for path in _NESTED:
        holder = _holder(record, path)
        if holder is not None:
            # Twice: a nested field is as likely to change as a top-level one.
            keys += [f"{path}.{key}" for key in [*holder, "extra", "repo", "format_version"]] * 2
    return keys


def _holder(record: dict[str, Any], path: str) -> dict[str, Any] | None:
    value: Any = record
    for part in path.split(".") if path else ():
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else None


@st.composite
def _records(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(sorted(_RECORDS)))
    record = copy.deepcopy(_RECORDS[kind])
    for _ in range(draw(st.integers(0, 3))):
        holder_path, _, name = draw(st.sampled_from(_record_keys(record))).rpartition(".")
        target = _holder(record, holder_path)
        if target is None:
            continue
        if draw(st.booleans()):
            target.pop(name, None)
        else:
            target[name] = copy.deepcopy(draw(_ODD | _ODD_NUMBERS))
    return kind, record


@settings(max_examples=3000, deadline=None)
@given(_records())
def test_a_record_the_plain_checks_accept_is_one_the_models_accept(drawn: tuple[str, dict[str, Any]]) -> None:
    kind, record = drawn
    if schema.plainly_valid(kind, record):
        assert schema.model_problems(kind, record) == []


def test_the_plain_checks_know_every_field_of_every_model() -> None:
    for model, (required, optional) in schema.PLAIN_FIELDS.items():
        fields = getattr(models, model).model_fields
        assert set(required) == {name for name, field in fields.items() if field.is_required()}, model
        assert set(optional) == {name for name, field in fields.items() if not field.is_required()}, model
    for kind, record in _RECORDS.items():
        assert schema.plainly_valid(kind, record), kind
    assert set(models.Step.model_fields) == plain.STEP_FIELDS
    assert set(models.Flag.model_fields) == plain.FLAG_FIELDS
    assert set(models.StepError.model_fields) == plain.ERROR_FIELDS


def test_checking_records_plainly_builds_no_model() -> None:
    """An ingest process maps and checks records without pydantic (building the models is most
    of its start-up); the models are built the first time a record needs them."""
    code = (
        "import sys; from postrun import schema; import postrun.ingest.pool_process, postrun.agents.cline.adapter;"
        " assert 'pydantic' not in sys.modules, 'pydantic imported';"
        " print(schema.record_problems('actor', {'id': '', 'type': 'root'}));"
        " assert 'pydantic' in sys.modules"
    )
    checked = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    assert "actor.id" in checked.stdout


def test_every_reference_problem_of_the_steps_is_named() -> None:
    session = session_record()
    segments = [{"index": 0, "start_reason": "start", "started_at": _TIME, "source_files": []}]
    actors = [{"id": "root", "type": "root"}]
    turns = [{**_RECORDS["turn"], "session_id": session["id"]}]
    steps = [
        {"id": "a", "session_id": session["id"], "turn_id": "turn:1", "actor_id": "root", "segment_index": 0, "seq": 0},
        {"id": "b", "session_id": session["id"], "turn_id": "turn:1", "actor_id": "root", "segment_index": 0, "seq": 1},
    ]
    assert schema.reference_problems(session, segments, actors, turns, steps) == []
    steps += [
        {"id": "a", "session_id": "other", "turn_id": "turn:9", "actor_id": "helper", "segment_index": 3, "seq": 1},
    ]
    assert schema.reference_problems(session, segments, actors, turns, steps) == [
        "steps[2].session_id: differs from session.id",
        "steps[2].turn_id: names no turn of the session",
        "steps[2].actor_id: names no actor of the session",
        "steps[2].segment_index: names no segment of the session",
        "steps[2].seq: duplicate 1",
        "steps[2].id: duplicate a",
    ]
