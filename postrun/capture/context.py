"""What a capture run is given (settings, paths, logger, hooks), and what every run does first."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from postrun.capture.clock import Clock, MonotonicClock
from postrun.capture.lock import CaptureLock
from postrun.capture.log import ProgressBar
from postrun.errors import StoreError
from postrun.paths import Paths, ensure_private_dir
from postrun.settings import LoadedSettings, Settings
from postrun.text import plural


@dataclass
class CaptureContext:
    """Everything a capture run needs that is decided outside it (so tests and --daemon can build one)."""

    loaded: LoadedSettings
    paths: Paths
    environ: Mapping[str, str]
    logger: logging.Logger
    progress: ProgressBar | None = None
    reload: Callable[[], LoadedSettings] | None = None
    on_ready: Callable[[int], None] = lambda pid: None
    set_log_level: Callable[[str], None] = lambda level: None
    clock: Clock = field(default_factory=MonotonicClock)

    @property
    def settings(self) -> Settings:
        return self.loaded.settings


def watching_line(kind: str, root: Path, present: int, changed: int) -> str:
    """The first line a capture logs for each root it watches, ``--once`` included (scripts look for it)."""
    return f"{kind}: watching {root} ({plural(present, 'session', grouped=False)} present, {changed} new or changed)"


def capture_lock(paths: Paths) -> CaptureLock:
    """The store's capture lock, in the store's folder (created private if missing)."""
    try:
        ensure_private_dir(paths.data_dir)
    except OSError as exc:
        raise StoreError(str(paths.data_dir), f"cannot create the store's folder ({exc.strerror or exc})") from None
    return CaptureLock(paths.capture_lock, db=paths.db)
