"""Review verdicts: what a reviewer concluded about a session, every change kept with its time.

The only thing the review app writes. A verdict lives in Postrun's store next to the
session; re-ingesting the session never touches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import orjson

from postrun.errors import UsageError
from postrun.store.db import Database
from postrun.store.query import no_session
from postrun.timestamps import utc_iso

VerdictState = Literal["looks_good", "needs_follow_up"]
VERDICT_STATES: tuple[VerdictState, ...] = ("looks_good", "needs_follow_up")
VERDICT_LABELS = {"looks_good": "looks good", "needs_follow_up": "needs follow-up", "unreviewed": "unreviewed"}
# What `--verdict` and the sessions page filter by: a state, or none recorded yet.
VERDICT_FILTERS = (*VERDICT_STATES, "unreviewed")
NOTE_MAX_CHARS = 2000
BULK_MAX_SESSIONS = 200  # four pages of the sessions list


@dataclass(frozen=True, slots=True)
class Verdict:
    state: VerdictState
    note: str
    at: str  # UTC

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "note": self.note, "at": self.at}


def check_verdict(state: str, note: str) -> tuple[VerdictState, str]:
    """The state and note as stored (UsageError when the state is unknown or the note too long)."""
    for known in VERDICT_STATES:
        if state == known:
            if len(note) > NOTE_MAX_CHARS:
                raise UsageError("note", f"at most {NOTE_MAX_CHARS} characters ({len(note)} given)")
            return known, note.strip()
    raise UsageError("verdict", f"unknown verdict {state!r} (known: {', '.join(VERDICT_STATES)})")


def check_verdict_filter(value: str | None) -> str | None:
    if value is not None and value not in VERDICT_FILTERS:
        raise UsageError("--verdict", f"unknown verdict {value!r} (known: {', '.join(VERDICT_FILTERS)})")
    return value


def record_verdict(database: Database, session_id: str, state: str, note: str, *, now: datetime) -> Verdict:
    """Add ``session_id``'s newest verdict; the earlier ones stay as its history."""
    return record_verdicts(database, [session_id], state, note, now=now)[0]


def record_verdicts(
    database: Database, session_ids: Sequence[str], state: str, note: str, *, now: datetime
) -> list[Verdict]:
    """Add one verdict to each of ``session_ids`` (a bulk review), all or none: each becomes
    that session's newest, the earlier ones stay as its history."""
    checked_state, checked_note = check_verdict(state, note)
    if not session_ids:
        raise UsageError("sessions", "no session chosen")
    if len(session_ids) > BULK_MAX_SESSIONS:
        raise UsageError("sessions", f"at most {BULK_MAX_SESSIONS} sessions at once ({len(session_ids)} chosen)")
    stamp = utc_iso(now)
    with database.transaction() as connection:
        for session_id in dict.fromkeys(session_ids):
            if connection.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                raise no_session(session_id, database.path)
            connection.execute(
                "INSERT INTO verdicts (session_id, state, note, at) VALUES (?, ?, ?, ?)",
                (session_id, checked_state, checked_note, stamp),
            )
    return [Verdict(checked_state, checked_note, stamp) for _ in dict.fromkeys(session_ids)]


def verdict_history(database: Database, session_id: str) -> list[Verdict]:
    """Every verdict of the session, newest first."""
    return [
        Verdict(state, note, at)
        for state, note, at in database.execute(
            "SELECT state, note, at FROM verdicts WHERE session_id = ? ORDER BY id DESC", (session_id,)
        )
    ]


def current_verdicts(database: Database, session_ids: list[str]) -> dict[str, Verdict]:
    """The newest verdict of each of ``session_ids`` that has one."""
    found: dict[str, Verdict] = {}
    for session_id, state, note, at in database.execute(
        "SELECT v.session_id, v.state, v.note, v.at FROM verdicts v"
        " WHERE v.session_id IN (SELECT value FROM json_each(?1))"
        "   AND v.id = (SELECT max(id) FROM verdicts w WHERE w.session_id = v.session_id)",
        (orjson.dumps(session_ids).decode(),),
    ):
        found[session_id] = Verdict(state, note, at)
    return found
