"""``postrun status``: whether a capture holds the store, and what the store holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from postrun.capture.lock import CaptureInfo, read_capture_info
from postrun.store.db import reading
from postrun.store.query import StoreCounts, counts


@dataclass(frozen=True, slots=True)
class CaptureStatus:
    """Who holds the capture lock (None: not running) and what is stored."""

    capture: CaptureInfo | None
    stored: StoreCounts | None  # None: no store yet


def capture_status(db: Path, capture_lock: Path) -> CaptureStatus:
    with reading(db) as database:
        stored = None if database is None else counts(database)
    return CaptureStatus(read_capture_info(capture_lock), stored)
