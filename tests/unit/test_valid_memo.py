"""A live session's turns and steps found valid at its last mapping are not checked again; any
turn that changed is, and so are new steps, steps re-made at the end, and every step once the
first are not the last check's (``MappedSession.validate``' ``valid``,
``postrun.ingest.prepare.ValidMemo``)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import postrun.records
import postrun.schema.consistent
from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.ingest.prepare import ValidMemo
from postrun.records import StepRow, Validated
from postrun.schema import SchemaError
from postrun.store.db import Database
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support.builders import mapped_session, message_step


def turns_checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    checked: list[str] = []
    real = postrun.records.schema.record_problems

    def counting(kind: str, data: object, path: str | None = None) -> list[str]:
        if kind == "turn":
            checked.append(str(path))
        return real(kind, data, path)

    monkeypatch.setattr(postrun.records.schema, "record_problems", counting)
    return checked


def test_only_the_turns_that_changed_are_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [message_step(0, "hi", turn_id="turn:1"), message_step(1, "go", turn_id="turn:2")]
    before = mapped_session(steps)
    before.validate()
    after = mapped_session([*steps, message_step(2, "on", turn_id="turn:2")])
    checked = turns_checked(monkeypatch)
    after.validate(Validated(copy.deepcopy(before.turns)))
    assert checked == ["turns[1]"]  # turn:2 got a step; turn:1 is as it was found valid


def test_a_turn_that_turned_invalid_is_refused_whatever_was_valid_before() -> None:
    mapped = mapped_session([message_step(0, "hi", turn_id="turn:1")])
    valid = Validated(copy.deepcopy(mapped.turns))
    mapped.turns[0]["index"] = -1
    with pytest.raises(SchemaError, match=r"turns\[0\]"):
        mapped.validate(valid)


def test_a_capture_re_ingest_checks_only_its_last_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    session = Synthetic(synthetic_id(1), seed=1)
    for _ in range(3):
        session.messages.append({**session.messages[0], "id": f"u{len(session.messages)}"})  # more prompts: turns
        session.grow()
    session.write(root)
    location = SessionLocation.in_root(root, session.session_id)
    with Database.open(tmp_path / "postrun.db") as database:
        ingester = Ingester(database, max_bytes=2**26, valid_memo=ValidMemo(8))
        outcome, cache = ingester.ingest(location, live=True)
        assert outcome.turns == 4
        session.grow()
        session.write(root)
        checked = turns_checked(monkeypatch)
        ingester.ingest(location, cache, live=True)
    assert checked == ["turns[3]"]


def steps_named(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many steps each gathering of step references went through."""
    counts: list[int] = []
    real = postrun.schema.consistent._named

    def counting(steps: tuple[dict[str, object], ...]) -> postrun.schema.ConsistentSteps:
        counts.append(len(steps))
        return real(steps)

    monkeypatch.setattr(postrun.schema.consistent, "_named", counting)
    return counts


def _rows(*records: dict[str, object]) -> list[StepRow]:
    return [StepRow.build(record) for record in records]


def test_only_the_steps_after_the_last_checks_are_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(message_step(0, "hi"), message_step(1, "go"))
    valid = replace_steps(mapped_session([]), rows).validate()
    counts = steps_named(monkeypatch)
    again = replace_steps(mapped_session([]), [*rows, *_rows(message_step(2, "on"))]).validate(valid)
    assert counts == [1]  # the new step alone
    assert again.steps is not None and len(again.steps.steps) == 3


def test_a_new_step_that_repeats_an_id_or_seq_is_refused_whatever_was_valid_before() -> None:
    rows = _rows(message_step(0, "hi"), message_step(1, "go"))
    valid = replace_steps(mapped_session([]), rows).validate()
    for repeat in (message_step(1, "on", step_id="msg_9#0"), message_step(2, "on", step_id="msg_0#0")):
        with pytest.raises(SchemaError, match=r"steps\[2\]\.(seq|id): duplicate"):
            replace_steps(mapped_session([]), [*rows, *_rows(repeat)]).validate(valid)


def test_steps_whose_turn_is_gone_are_refused_whatever_was_valid_before() -> None:
    rows = _rows(message_step(0, "hi", turn_id="turn:1"), message_step(1, "go", turn_id="turn:2"))
    before = replace_steps(mapped_session([]), rows)
    before.turns[:] = [{**before.turns[0], "id": "turn:1"}, {**before.turns[0], "id": "turn:2", "index": 2}]
    valid = before.validate()
    after = replace_steps(mapped_session([]), rows)  # the same steps, but only turn:1 left
    with pytest.raises(SchemaError, match=r"steps\[1\]\.turn_id: names no turn"):
        after.validate(valid)


def test_a_step_re_made_at_the_end_is_checked_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(message_step(0, "hi"), message_step(1, "go"), message_step(2, "on"))
    valid = replace_steps(mapped_session([]), rows).validate()
    counts = steps_named(monkeypatch)
    # The last step re-made (a call's output came): the two before it are the very same rows.
    again = replace_steps(mapped_session([]), [*rows[:2], *_rows(message_step(2, "on and on"))]).validate(valid)
    assert counts == [1, 1]  # the step taken out, and the one put in its place
    assert again.steps is not None and [step["seq"] for step in again.steps.steps] == [0, 1, 2]
    further = replace_steps(mapped_session([]), [*rows[:2], *_rows(message_step(2, "x"), message_step(3, "y"))])
    assert further.validate(again).steps is not None


def test_a_re_made_step_that_repeats_a_kept_id_or_seq_is_refused() -> None:
    rows = _rows(message_step(0, "hi"), message_step(1, "go"), message_step(2, "on"))
    valid = replace_steps(mapped_session([]), rows).validate()
    for repeat in (message_step(1, "on", step_id="msg_9#0"), message_step(2, "on", step_id="msg_0#0")):
        with pytest.raises(SchemaError, match=r"steps\[2\]\.(seq|id): duplicate"):
            replace_steps(mapped_session([]), [*rows[:2], *_rows(repeat)]).validate(valid)


def test_steps_that_are_not_the_last_checks_are_all_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(message_step(0, "hi"), message_step(1, "go"))
    valid = replace_steps(mapped_session([]), rows).validate()
    counts = steps_named(monkeypatch)
    # Equal records, but not the ones found valid: nothing is taken on trust.
    replace_steps(mapped_session([]), _rows(message_step(0, "hi"), message_step(1, "go"))).validate(valid)
    assert counts == [2]


def replace_steps(mapped: postrun.records.MappedSession, rows: list[StepRow]) -> postrun.records.MappedSession:
    """``mapped`` with ``rows`` for steps, its one turn naming them all."""
    mapped.steps[:] = rows
    mapped.turns[0]["step_ids"] = [row.id for row in rows]
    return mapped
