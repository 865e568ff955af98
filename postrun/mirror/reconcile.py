"""What the mirror holds of this machine against what the store holds: the mirror's drift.

The outbox says what changed since the last push; it cannot know that the database was
restored from an older dump, dropped and created again, or holds sessions pushed under other
redaction rules (or in clear, before the mirror was redacted). So every connection compares
each session's ``updated_at``, digest and redaction with the store's, and the push queues
what differs: a missing session is sent, one held otherwise is deleted and sent again whole,
one the store forgot (a tombstone) is deleted. A session only the mirror holds, and that this
store never forgot, is left alone: it may be the only copy left (a store restored from an
older backup).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from postrun.mirror.bounded import bounded
from postrun.mirror.rows import NOT_REDACTED
from postrun.store.outbox import Held
from postrun.text import plural


@dataclass(frozen=True, slots=True)
class Mirrored:
    """One session's row in ``postrun.sessions``."""

    updated_at: datetime
    digest: str
    redaction: str


@dataclass(frozen=True, slots=True)
class Drift:
    missing: tuple[str, ...]  # stored, not in the mirror: sent
    stale: tuple[str, ...]  # held otherwise (older, or under other redaction): deleted, sent whole
    forgotten: tuple[str, ...]  # forgotten here, still in the mirror: deleted
    mirror_only: int  # held by the mirror alone, never forgotten here: left alone

    @property
    def sessions(self) -> int:
        """How many sessions a push must send or delete."""
        return len(self.missing) + len(self.stale) + len(self.forgotten)


def mirrored(
    connection: psycopg.Connection[tuple[Any, ...]], machine_id: str, *, redaction: bool = True
) -> dict[str, Mirrored]:
    """This machine's sessions in the mirror (``redaction`` False: a schema from before the
    column, whose sessions were all pushed in clear)."""
    column = "redaction" if redaction else f"'{NOT_REDACTED}'"
    with bounded(connection):
        rows = connection.execute(
            f"SELECT session_id, updated_at, digest, {column} FROM postrun.sessions WHERE machine_id = %s",
            (machine_id,),
        ).fetchall()
    return {
        str(session_id): Mirrored(updated_at, str(digest), str(pushed_as))
        for session_id, updated_at, digest, pushed_as in rows
    }


def drift(store: Held, mirror: Mapping[str, Mirrored], redaction: str) -> Drift:
    """What differs. A session waiting in the outbox is compared by its redaction alone (its
    push is still to come, but would send only what changed, in clear or not)."""
    missing, stale = [], []
    for session_id, (updated_at, digest) in store.sessions.items():
        held = mirror.get(session_id)
        if held is not None and held.redaction != redaction:
            stale.append(session_id)
        elif session_id in store.waiting:
            continue
        elif held is None:
            missing.append(session_id)
        elif held.digest != digest or held.updated_at != datetime.fromisoformat(updated_at):
            stale.append(session_id)
    others = [sid for sid in mirror if sid not in store.sessions and sid not in store.waiting]
    forgotten = [sid for sid in others if sid in store.forgotten]
    return Drift(tuple(sorted(missing)), tuple(sorted(stale)), tuple(sorted(forgotten)), len(others) - len(forgotten))


def describe_drift(found: Drift) -> str:
    """``the mirror lacks 2 sessions, holds 1 otherwise`` (for logs and ``mirror status``)."""
    parts = []
    if found.missing:
        parts.append(f"lacks {plural(len(found.missing), 'session')}")
    if found.stale:
        parts.append(f"holds {plural(len(found.stale), 'session')} otherwise (older, or under other redaction)")
    if found.forgotten:
        parts.append(f"holds {plural(len(found.forgotten), 'session')} forgotten here")
    return "the mirror " + ", ".join(parts) if parts else "the mirror holds what the store holds"
