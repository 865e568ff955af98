"""A live session's turns found valid at its last mapping are not checked again; any turn that
changed is (``MappedSession.problems``' ``valid_turns``, ``postrun.ingest.prepare.TurnsMemo``)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import postrun.records
from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.ingest.prepare import TurnsMemo
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
    after.validate(copy.deepcopy(before.turns))
    assert checked == ["turns[1]"]  # turn:2 got a step; turn:1 is as it was found valid


def test_a_turn_that_turned_invalid_is_refused_whatever_was_valid_before() -> None:
    mapped = mapped_session([message_step(0, "hi", turn_id="turn:1")])
    valid = copy.deepcopy(mapped.turns)
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
        ingester = Ingester(database, max_bytes=2**26, turns_memo=TurnsMemo(8))
        outcome, cache = ingester.ingest(location, live=True)
        assert outcome.turns == 4
        session.grow()
        session.write(root)
        checked = turns_checked(monkeypatch)
        ingester.ingest(location, cache, live=True)
    assert checked == ["turns[3]"]
