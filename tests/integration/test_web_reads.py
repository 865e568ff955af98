"""What the review app's reads cost over a real store: a big session's page and an opened turn
decode only the step records they show; the inbox counts and the review order."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from postrun.store import codec
from postrun.store.browse import session_page
from postrun.store.db import Database
from postrun.store.inbox import inbox
from postrun.store.session_filter import SessionFilter
from postrun.store.write import upsert_session
from postrun.web import data
from postrun.web.present import TURN_PART_STEPS
from tests.support.web import (
    BIG_SESSION,
    BIG_STEPS_PER_TURN,
    BIG_TURNS,
    LONG_TURN_SESSION,
    LONG_TURN_STEPS,
    big_session,
    long_turn_session,
)
from tests.support.web_inbox import EXPECTED_ORDER, FIRST_FLAGGED, A, B, C, D, F, G, H, build_inbox_store


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store" / "postrun.db"
    with Database.open(path) as database:
        upsert_session(database, big_session(), now=datetime.now(UTC), captured_on="tests")
    return path


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The seq of every step record decoded from the store."""
    seqs: list[int] = []
    load = codec.load

    def counting(stored: Any) -> Any:
        record = load(stored)
        if isinstance(record, dict) and "seq" in record and "payload" in record:
            seqs.append(int(record["seq"]))
        return record

    monkeypatch.setattr(codec, "load", counting)
    yield seqs


def test_a_big_sessions_page_decodes_its_last_turn_and_the_prompts_only(db: Path, decoded: list[int]) -> None:
    stored = data.stored_session(db, BIG_SESSION, with_history=False)
    last_turn = range((BIG_TURNS - 1) * BIG_STEPS_PER_TURN, BIG_TURNS * BIG_STEPS_PER_TURN)
    prompts = [turn * BIG_STEPS_PER_TURN for turn in range(BIG_TURNS)]
    assert sorted(set(decoded)) == sorted({*last_turn, *prompts})
    assert len(decoded) <= len(last_turn) + len(prompts)
    view = stored.view
    assert (view.steps, len(view.turns)) == (BIG_TURNS * BIG_STEPS_PER_TURN, BIG_TURNS)
    assert [turn.lazy for turn in view.turns] == [True] * (BIG_TURNS - 1) + [False]
    assert [turn.prompt for turn in view.turns] == [f"BIG-PROMPT-{n}" for n in range(1, BIG_TURNS + 1)]
    assert all(turn.count == BIG_STEPS_PER_TURN for turn in view.turns)
    assert view.turns[2].seqs == (2 * BIG_STEPS_PER_TURN, 3 * BIG_STEPS_PER_TURN - 1)


def test_an_opened_turn_decodes_that_turns_steps_only(db: Path, decoded: list[int]) -> None:
    view = data.stored_turn(db, BIG_SESSION, "turn:3")
    (turn,) = [turn for turn in view.turns if turn.id == "turn:3"]
    wanted = list(range(2 * BIG_STEPS_PER_TURN, 3 * BIG_STEPS_PER_TURN))
    assert [step.seq for step in turn.steps] == wanted
    assert sorted(decoded) == wanted


def test_the_inbox_counts_and_orders_what_needs_review(tmp_path: Path) -> None:
    path = tmp_path / "inbox.db"
    build_inbox_store(path)
    with Database.open(path) as database:
        found = inbox(database, SessionFilter())
        assert (found.needs_review, found.danger, found.failed_commands, found.rejected) == (4, 2, 1, 1)
        assert [(k.kind, k.severity, k.sessions) for k in found.kinds] == [
            ("dangerous_command", "danger", 1),
            ("secret_in_output", "danger", 1),
            ("sensitive_read", "warn", 2),
            ("rejected", "warn", 1),
            ("failed", "info", 2),
        ]
        codex = inbox(database, SessionFilter(agent="codex", flag="failed", page=3))  # scoped by agent only
        assert (codex.needs_review, codex.failed_commands, [k.kind for k in codex.kinds]) == (
            1,
            1,
            ["sensitive_read", "failed"],
        )
        page = session_page(database, SessionFilter(order="review"))
        assert [row.id for row in page.rows[: len(EXPECTED_ORDER)]] == EXPECTED_ORDER
        rows = {row.id: row for row in page.rows}
        assert {row.id for row in page.rows if row.needs_review} == {A.id, G.id, C.id, B.id}
        assert {session_id: rows[session_id].first_flagged for session_id in FIRST_FLAGGED} == FIRST_FLAGGED
        assert [(f.kind, f.severity, f.steps) for f in rows[G.id].flags] == [
            ("secret_in_output", "danger", 1),
            ("sensitive_read", "warn", 1),
        ]
        assert rows[D.id].verdict is not None and not rows[D.id].needs_review
        assert page.total == 68 and page.pages == 2
        newest = session_page(database, SessionFilter(agent="codex"))
        assert [row.id for row in newest.rows] == [H.id, F.id, B.id]


def test_a_long_turn_shows_its_last_part_and_reads_its_steps_only(tmp_path: Path, decoded: list[int]) -> None:
    """One prompt and 2,600 steps: the page reads and shows the last 300-step part of the turn,
    the earlier parts as headings that load (and read) their own steps when opened."""
    db = tmp_path / "store" / "postrun.db"
    with Database.open(db) as database:
        upsert_session(database, long_turn_session(), now=datetime.now(UTC), captured_on="tests")
    decoded.clear()
    view = data.stored_session(db, LONG_TURN_SESSION, with_history=False).view
    parts = -(-LONG_TURN_STEPS // TURN_PART_STEPS)
    last = range((parts - 1) * TURN_PART_STEPS, LONG_TURN_STEPS)
    assert sorted(set(decoded)) == sorted({0, *last})  # the prompt, and the last part
    assert [(turn.part, turn.lazy) for turn in view.turns] == [(n, n < parts) for n in range(1, parts + 1)]
    assert [step.seq for step in view.turns[-1].steps] == list(last)
    assert view.turns[1].seqs == (TURN_PART_STEPS, 2 * TURN_PART_STEPS - 1)
    assert view.turns[1].count == TURN_PART_STEPS and view.turns[0].prompt and not view.turns[1].prompt
    assert sum(turn.count for turn in view.turns) == view.steps == LONG_TURN_STEPS
    decoded.clear()
    opened = data.stored_turn(db, LONG_TURN_SESSION, "turn:1", view.turns[1].seqs)
    wanted = list(range(TURN_PART_STEPS, 2 * TURN_PART_STEPS))
    assert [step.seq for step in opened.turns[0].steps] == wanted
    assert sorted(decoded) == wanted
