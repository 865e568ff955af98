"""Flags put on a mapped session's steps, before the store computes anything from them.

Every step the adapter mapped (the lead's and helpers' alike) gets the flags of
``step_flags``, a read step with the text its read returned (``MappedSession.read_texts``),
which is dropped then: it goes no further than the rules. A step whose flags are unchanged
keeps its row (and digest) as it was.
A capture re-ingests a live session after each message, so the flagged rows of the steps it
already flagged are remembered per session (bounded) instead of recomputed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

from postrun.records import MappedSession, StepRow
from postrun.review.flags import step_flags

MEMO_SESSIONS = 8  # sessions whose flagged steps are remembered (the ones changing right now)


class FlagMemo:
    """Each recent session's flagged rows by the digest of the step as the adapter mapped it
    (and, for a read, the hash of the text read: within one process, as the memo lives).

    A row without flags is the adapter's own (which its mapping cache holds anyway), so
    remembering it costs no memory."""

    def __init__(self, limit: int = MEMO_SESSIONS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, dict[str, StepRow]] = OrderedDict()

    def take(self, session_id: str) -> dict[str, StepRow]:
        with self._lock:
            return self._sessions.pop(session_id, {})

    def keep(self, session_id: str, rows: dict[str, StepRow]) -> None:
        if self.limit <= 0:
            return
        with self._lock:
            self._sessions[session_id] = rows
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)


def flag_session(mapped: MappedSession, memo: FlagMemo | None = None) -> MappedSession:
    """``mapped`` with every step's ``flags`` set by the rules, and no ``read_texts`` left."""
    root = str(mapped.session["workspace"]["root"])
    known = memo.take(mapped.id) if memo is not None else {}
    read_texts = mapped.read_texts
    seen: dict[str, StepRow] = {}
    rows: list[StepRow] = []
    for row in mapped.steps:
        read_text = read_texts.get(row.id) if read_texts else None
        key = row.digest if read_text is None else f"{row.digest}:{hash(read_text)}"
        flagged = known.get(key)
        if flagged is None:
            # The rules only make valid v1.2 flags, so the row is re-serialized, not re-validated.
            flags = step_flags(row.record, root, row.blob, read_text)
            flagged = row if flags == row.record["flags"] else row.with_fields(flags=flags)
        if memo is not None:
            seen[key] = flagged
        rows.append(flagged)
    if memo is not None:
        memo.keep(mapped.id, seen)
    return replace(mapped, steps=rows, read_texts={})
