"""`search` over a real store never answers with a step found only by a secret it holds: the
step would confirm the guess, though its snippet masks the secret (``found_in_secret``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from postrun.recall.citations import ReviewApp
from postrun.recall.tools import Recall
from postrun.store.db import Database
from postrun.store.write import upsert_session
from tests.support.builders import command_step, mapped_session

SESSION = "1790000900000_secrets"
PASSWORD = "Xk9vQ2mP7rTzqW"
KEY = "AKIAQ7RZ2V5HMN3PLW4X"
PGPASS = f"db.example.com:5432:app:bob:{PASSWORD}"


def recall_over(tmp_path: Path, *, planted: int, plain: int) -> Recall:
    """``planted`` steps that print the secrets, then ``plain`` steps that name the password
    out of any context the detector knows (so it is shown there, as any word)."""
    db = tmp_path / "postrun.db"
    steps = [
        command_step(seq, "cat ~/.pgpass", f"{PGPASS}\naws key {KEY} in the pgpass notes", session_id=SESSION)
        for seq in range(planted)
    ]
    steps += [
        command_step(
            seq, "grep -r staging docs", f"docs/db.md: the {PASSWORD} staging name " + "word " * 200, session_id=SESSION
        )
        for seq in range(planted, planted + plain)
    ]
    with Database.open(db) as database:
        upsert_session(database, mapped_session(steps, session_id=SESSION), now=datetime.now(UTC), captured_on="t")
    return Recall(db, ReviewApp(tmp_path / "serve.json"), clock=lambda: datetime.now(UTC))


def test_a_guessed_secret_finds_nothing(tmp_path: Path) -> None:
    recall = recall_over(tmp_path, planted=3, plain=0)
    # Before: each of these answered with the three steps (the snippets masked), confirming the
    # guess; the detector refused the exact key only, not the password alone or a lower-case key.
    for guess in (PASSWORD, PASSWORD.lower(), KEY.lower(), f"bob:{PASSWORD}", f"notes {PASSWORD.upper()}"):
        found = recall.search(guess, include_active=True)
        assert found.hits == [] and not found.more, guess
    # The words around the secrets still find the steps, the secrets masked.
    around = recall.search("pgpass notes", include_active=True)
    assert sorted(hit.seq for hit in around.hits) == [0, 1, 2]
    assert all(PASSWORD not in hit.snippet and "[REDACTED:" in hit.snippet for hit in around.hits)


def test_steps_found_only_by_a_secret_leave_room_for_the_others(tmp_path: Path) -> None:
    # The 30 steps that hold the password in a .pgpass line rank first (short texts), and are
    # left out page after page until the steps that show it as a plain word are read.
    recall = recall_over(tmp_path, planted=30, plain=2)
    first = recall.search(PASSWORD, include_active=True, limit=1)
    assert [hit.seq for hit in first.hits] in ([30], [31]) and first.more
    assert PASSWORD in first.hits[0].snippet  # shown there: no secret confirmed
    both = recall.search(PASSWORD.lower(), include_active=True, limit=10)
    assert sorted(hit.seq for hit in both.hits) == [30, 31] and not both.more
