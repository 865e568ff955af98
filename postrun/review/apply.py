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
from dataclasses import dataclass, field, replace

from postrun.prefix import same_prefix
from postrun.records import MappedSession, StepRow
from postrun.review.flags import step_flags

MEMO_SESSIONS = 8  # sessions whose flagged steps are remembered (the ones changing right now)


@dataclass(frozen=True, slots=True)
class Flagged:
    """One session's last flagging: each row flagged, by the digest of the step as the adapter
    mapped it (and, for a read, the hash of the text read: within one process, as the memo
    lives); and the rows it was given, in order, with the hash of each read's text."""

    by_key: dict[str, StepRow]
    given: tuple[StepRow, ...] = ()
    flagged: tuple[StepRow, ...] = ()
    read_hashes: dict[str, int] = field(default_factory=dict)


class FlagMemo:
    """Each recent session's last flagging (``Flagged``).

    A row without flags is the adapter's own (which its mapping cache holds anyway), so
    remembering it costs no memory."""

    def __init__(self, limit: int = MEMO_SESSIONS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, Flagged] = OrderedDict()

    def take(self, session_id: str) -> Flagged | None:
        with self._lock:
            return self._sessions.pop(session_id, None)

    def keep(self, session_id: str, flagged: Flagged) -> None:
        if self.limit <= 0:
            return
        with self._lock:
            self._sessions[session_id] = flagged
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)


def flag_session(mapped: MappedSession, memo: FlagMemo | None = None) -> MappedSession:
    """``mapped`` with every step's ``flags`` set by the rules, and no ``read_texts`` left."""
    root = str(mapped.session["workspace"]["root"])
    last = memo.take(mapped.id) if memo is not None else None
    read_texts = mapped.read_texts
    steps = mapped.steps
    start = _unchanged(last, steps, read_texts)
    known = last.by_key if last is not None else {}
    # Taken from the memo, the last pass's rows by key are this one's: a pass that goes on from
    # the same rows adds to them and drops those of the last pass's rows after what they share
    # (re-made or moved); any other keeps only its own rows' (the memo stays bounded).
    seen = known if start else {}
    rows = list(last.flagged[:start]) if last is not None and start else []
    keys: set[str] = set()
    for row in steps[start:]:
        read_text = read_texts.get(row.id) if read_texts else None
        key = _key(row, None if read_text is None else hash(read_text))
        flagged = known.get(key)
        if flagged is None:
            # The rules only make valid v1.2 flags, so the row is re-serialized, not re-validated.
            flags = step_flags(row.record, root, row.blob, read_text)
            flagged = row if flags == row.record["flags"] else row.with_fields(flags=flags)
        if memo is not None:
            seen[key] = flagged
            keys.add(key)
        rows.append(flagged)
    if memo is not None and last is not None and start:
        for row in last.given[start:]:
            key = _key(row, last.read_hashes.get(row.id))
            if key not in keys:
                seen.pop(key, None)
    if memo is not None:
        hashes = {step_id: hash(text) for step_id, text in read_texts.items()}
        memo.keep(mapped.id, Flagged(seen, tuple(steps), tuple(rows), hashes))
    return replace(mapped, steps=rows, read_texts={})


def _key(row: StepRow, text_hash: int | None) -> str:
    """What a flagged row is remembered by: the step as mapped, and the hash of its read's text."""
    return row.digest if text_hash is None else f"{row.digest}:{text_hash}"


def _unchanged(last: Flagged | None, steps: list[StepRow], read_texts: dict[str, str]) -> int:
    """How many leading rows are the last flagging's, as they were given, when every text it
    read is read the same (their flagged rows are then its own, as they stand)."""
    if last is None or not last.given:
        return 0
    count = same_prefix(steps, last.given)
    if not count:
        return 0
    for step_id, value in last.read_hashes.items():
        text = read_texts.get(step_id)
        if text is None or hash(text) != value:
            return 0
    # A read text new to this pass must be a new row's, not one of the rows flagged without it.
    new_texts = read_texts.keys() - last.read_hashes.keys()
    if new_texts and not new_texts <= {row.id for row in steps[count:]}:
        return 0
    return count
