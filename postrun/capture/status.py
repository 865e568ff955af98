"""``postrun status``: whether a capture holds the store, and what the store holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from postrun.capture.lock import CaptureInfo, read_capture_info
from postrun.errors import PostrunError
from postrun.store.db import reading
from postrun.store.query import StoreCounts, counts


@dataclass(frozen=True, slots=True)
class CaptureStatus:
    """Who holds the capture lock (None: not running) and what is stored."""

    capture: CaptureInfo | None
    stored: StoreCounts | None  # None: no store yet (or it could not be read: ``store_error``)
    # Why the store could not be read (not a SQLite file, written by another Postrun version):
    # whether capture runs is still known, and worth saying before the error.
    store_error: PostrunError | None = None


def capture_status(db: Path, capture_lock: Path) -> CaptureStatus:
    capture = read_capture_info(capture_lock)
    try:
        with reading(db) as database:
            stored = None if database is None else counts(database)
    except PostrunError as exc:
        return CaptureStatus(capture, None, exc)
    return CaptureStatus(capture, stored)
