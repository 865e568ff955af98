"""Stored sessions flagged again from their stored records, after the flag rules changed."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from postrun.review.apply import flag_session
from postrun.review.flags import RULES_VERSION
from postrun.store.db import Database
from postrun.store.flags import set_rules_version, stored_rules_version
from postrun.store.remap import session_ids, stored_mapped_session
from postrun.store.write import upsert_session

if TYPE_CHECKING:
    from postrun.ingest.ingester import Progress


def refresh_flags(database: Database, *, now: datetime, captured_on: str, progress: Progress | None = None) -> int:
    """Re-flag every stored session from its stored records when the rules changed since it was
    flagged (the normal upsert: history keeps the earlier versions). Returns how many were
    re-flagged."""
    if stored_rules_version(database) == RULES_VERSION:
        return 0
    ids = session_ids(database)
    if progress is not None and ids:
        progress.start(len(ids), "re-flagging (the flag rules changed)")
    try:
        for session_id in ids:
            flagged = flag_session(stored_mapped_session(database, session_id))
            upsert_session(database, flagged, now=now, captured_on=captured_on)
            if progress is not None:
                progress.advance()
    finally:
        if progress is not None:
            progress.finish()
    set_rules_version(database, RULES_VERSION)
    return len(ids)
