"""`get_steps` pages of a session whose steps are large, on a real store: the page's budget
(``bounds.STEPS_BUDGET_CHARS``) is spent around the step asked for, so it is always on the page."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from postrun.recall import bounds
from postrun.recall.citations import ReviewApp
from postrun.recall.tools import Recall
from postrun.store.db import Database
from postrun.store.write import upsert_session
from tests.support.builders import command_step, mapped_session

SESSION = "1790000900000_pages"
OUTPUT_CHARS = 20_000  # each step's output, as max_chars lets it through whole


def recall_over(tmp_path: Path) -> Recall:
    db = tmp_path / "postrun.db"
    steps = [
        command_step(seq, f"make part{seq}", f"part {seq} " + "x" * OUTPUT_CHARS, session_id=SESSION)
        for seq in range(60)
    ]
    with Database.open(db) as database:
        upsert_session(database, mapped_session(steps, session_id=SESSION), now=datetime.now(UTC), captured_on="t")
    return Recall(db, ReviewApp(tmp_path / "serve.json"), clock=lambda: datetime.now(UTC))


def test_around_a_step_past_the_budget_the_step_is_on_the_page(tmp_path: Path) -> None:
    recall = recall_over(tmp_path)
    page = recall.get_steps(SESSION, around_seq=50, limit=100, max_chars=OUTPUT_CHARS + 100)
    seqs = [step.seq for step in page.steps]
    assert 50 in seqs, seqs  # before: the window from seq 0 ran out of budget at seq 8
    assert seqs == list(range(seqs[0], seqs[-1] + 1)) and seqs[0] < 50 < seqs[-1]  # around it, in order
    assert sum(len(step.payload["stdout"]) for step in page.steps) <= bounds.STEPS_BUDGET_CHARS
    assert page.next_from_seq == seqs[-1] + 1


def test_from_a_step_the_page_reads_on_while_the_budget_lasts(tmp_path: Path) -> None:
    recall = recall_over(tmp_path)
    page = recall.get_steps(SESSION, from_seq=10, limit=100, max_chars=OUTPUT_CHARS + 100)
    seqs = [step.seq for step in page.steps]
    assert seqs[0] == 10 and seqs == list(range(10, 10 + len(seqs))) and 1 < len(seqs) < 20
    assert page.next_from_seq == seqs[-1] + 1
    near_the_end = recall.get_steps(SESSION, around_seq=59, limit=4)
    assert [step.seq for step in near_the_end.steps] == [57, 58, 59] and near_the_end.next_from_seq is None


def test_a_page_of_terminal_escapes_is_bounded_as_json_sends_it(tmp_path: Path) -> None:
    # Output full of control characters (a binary file printed, colour codes): JSON writes each as
    # six characters. Before, the budget counted them as one, and a page sent 633,000 characters.
    session = "1790000900000_escapes"
    db = tmp_path / "escapes.db"
    noisy = ("\x01\x02\x1b[0m" * 5_000)[:OUTPUT_CHARS]
    steps = [command_step(seq, f"cat blob{seq}.bin", noisy, session_id=session) for seq in range(40)]
    with Database.open(db) as database:
        upsert_session(database, mapped_session(steps, session_id=session), now=datetime.now(UTC), captured_on="t")
    recall = Recall(db, ReviewApp(tmp_path / "serve.json"), clock=lambda: datetime.now(UTC))
    page = recall.get_steps(session, limit=100, max_chars=OUTPUT_CHARS)
    sent = sum(len(json.dumps(step.payload["stdout"])) - 2 for step in page.steps)
    assert 1 < len(page.steps) < 10 and sent <= bounds.STEPS_BUDGET_CHARS
    assert len(page.model_dump_json()) < bounds.STEPS_BUDGET_CHARS + 20_000
    assert page.next_from_seq == len(page.steps)
