"""The capture's log: ``<ISO time> <LEVEL> <message>`` lines, and a progress bar on a terminal.

Under journald (stderr *is* the stream named by ``JOURNAL_STREAM``) the time is left out,
since the journal adds its own, and each line starts with a ``<N>`` syslog priority that
journald turns into the entry's level. ``--daemon`` logs to a file instead of stderr.
"""

from __future__ import annotations

import contextlib
import io
import logging
import logging.handlers
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

from postrun.paths import ensure_private_dir
from postrun.text import one_line

LOGGER_NAME = "postrun"
# Libraries whose own warnings belong in Postrun's log, with its time and level (psycopg's
# "error ignored terminating <psycopg.Pipeline [BAD]>" when a server dies mid-batch).
LIBRARY_LOGGERS = ("psycopg",)
LOG_FILE_BYTES = 10 * 2**20  # --daemon's log rotates at 10 MB, keeping 3 old files
LOG_FILE_BACKUPS = 3
_SYSLOG_PRIORITY = {"DEBUG": 7, "INFO": 6, "WARNING": 4, "ERROR": 3, "CRITICAL": 2}
_PROGRESS_REDRAW_SECONDS = 0.1
_PROGRESS_WIDTH = 30


def stream_is_journal(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """True when ``stream`` is the journal stream systemd connected (``JOURNAL_STREAM=dev:ino``)."""
    value = environ.get("JOURNAL_STREAM", "")
    device, _, inode = value.partition(":")
    try:
        info = os.fstat(stream.fileno())
        return (info.st_dev, info.st_ino) == (int(device), int(inode))
    except (ValueError, OSError):
        return False


class LineFormatter(logging.Formatter):
    """``<ISO time> <LEVEL> <message>``; under journald ``<priority><LEVEL> <message>``."""

    def __init__(self, *, journal: bool) -> None:
        super().__init__()
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.name != LOGGER_NAME and not record.name.startswith(f"{LOGGER_NAME}."):
            # A library's line says whose, and is one line as Postrun's are (psycopg's run on).
            message = f"{record.name.partition('.')[0]}: {one_line(message)}"
        if record.exc_info and record.levelno <= logging.DEBUG:
            message = f"{message}\n{self.formatException(record.exc_info)}"
        if self.journal:
            return f"<{_SYSLOG_PRIORITY.get(record.levelname, 6)}>{record.levelname} {message}"
        moment = datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")
        return f"{moment} {record.levelname} {message}"


class ProgressBar:
    """One self-redrawing line on a terminal: ``<label> [#####     ] 120/400 sessions``."""

    def __init__(self, stream: TextIO, label: str = "catching up") -> None:
        self.stream = stream
        self.label = label
        self.lock = threading.RLock()  # shared with the log handler, so lines never interleave
        self._total = 0
        self._done = 0
        self._shown = False
        self._drawn_at = 0.0
        self._default_label = label

    @property
    def active(self) -> bool:
        return self._total > 0

    def start(self, total: int, label: str | None = None) -> None:
        with self.lock:
            self._total, self._done, self.label = total, 0, label or self._default_label
            self._draw(force=True)

    def advance(self, count: int = 1) -> None:
        """``count`` more done; the full bar stays drawn until ``finish`` (the summary replaces it)."""
        with self.lock:
            if not self.active or self._done >= self._total:
                return
            self._done += count
            self._draw(force=self._done >= self._total)

    def finish(self, line: Callable[[], None] = lambda: None) -> None:
        """Clear the bar for good; ``line`` (a log call) is written in its place before any other."""
        with self.lock:
            self.clear()
            self._total = 0
            line()

    def clear(self) -> None:
        with self.lock:
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False

    def redraw(self) -> None:
        with self.lock:
            if self.active:
                self._draw(force=True)

    def _draw(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < _PROGRESS_REDRAW_SECONDS:
            return
        filled = _PROGRESS_WIDTH * self._done // max(self._total, 1)
        bar = "#" * filled + " " * (_PROGRESS_WIDTH - filled)
        self.stream.write(f"\r\x1b[K{self.label} [{bar}] {self._done}/{self._total} sessions")
        self.stream.flush()
        self._shown = True
        self._drawn_at = now


class TerminalHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes log lines above the progress bar instead of through it."""

    def __init__(self, stream: TextIO, progress: ProgressBar) -> None:
        super().__init__(stream)
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        with self.progress.lock:
            self.progress.clear()
            super().emit(record)
            self.progress.redraw()


@dataclass
class LogSetup:
    logger: logging.Logger
    progress: ProgressBar | None  # None unless stderr is a terminal
    handler: logging.Handler
    previous: tuple[int, bool]  # the logger's level and propagate flag before
    libraries: tuple[tuple[logging.Logger, int, bool], ...] = ()  # the same, of LIBRARY_LOGGERS

    def set_level(self, level: str) -> None:
        self.logger.setLevel(level)

    def close(self) -> None:
        """Flush and detach the handler; the logger is as it was before."""
        if self.progress is not None:
            self.progress.finish()
        self.logger.removeHandler(self.handler)
        for library, level, propagate in self.libraries:
            library.removeHandler(self.handler)
            library.setLevel(level)
            library.propagate = propagate
        self.handler.close()
        self.logger.setLevel(self.previous[0])
        self.logger.propagate = self.previous[1]


class LogFileHandler(logging.handlers.RotatingFileHandler, logging.handlers.WatchedFileHandler):
    """``--daemon``'s log file: rotated at ``LOG_FILE_BYTES``, and opened anew (the standard
    library's ``WatchedFileHandler`` check) when the file at its path is no longer the one it
    writes (a person deleted the log, or a tool moved it away): writing on into the unlinked file
    lost every later line until the next rotation, 10 MB on."""

    def __init__(self, path: Path) -> None:
        # The rotating handler's own start (the watched one's is not run): then what it watches.
        super().__init__(path, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS, encoding="utf-8")
        self.dev, self.ino = -1, -1
        self._statstream()

    def _open(self) -> io.TextIOWrapper:
        with contextlib.suppress(OSError):  # its folder may be gone too; failing, the open says why
            ensure_private_dir(Path(self.baseFilename).parent)
        return super()._open()

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError):  # not opened again: the emit below opens it, or logging reports why
            self.reopenIfNeeded()
        super().emit(record)

    def doRollover(self) -> None:
        super().doRollover()
        self._statstream()


def configure_logging(level: str, *, environ: Mapping[str, str], log_file: Path | None = None) -> LogSetup:
    """Send Postrun's log to stderr (or to ``log_file``, created private) at ``level``.

    Raises OSError when the log file's folder cannot be created or the file opened.
    """
    handler: logging.Handler
    progress: ProgressBar | None = None
    if log_file is not None:
        ensure_private_dir(log_file.parent)
        handler = LogFileHandler(log_file)
        handler.setFormatter(LineFormatter(journal=False))
    else:
        stream = sys.stderr
        journal = stream_is_journal(stream, environ)
        if not journal and stream.isatty():
            progress = ProgressBar(stream)
            handler = TerminalHandler(stream, progress)
        else:
            handler = logging.StreamHandler(stream)
        handler.setFormatter(LineFormatter(journal=journal))
    logger = logging.getLogger(LOGGER_NAME)
    previous = (logger.level, logger.propagate)
    logger.handlers.clear()
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    libraries = []
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        libraries.append((library, library.level, library.propagate))
        library.addHandler(handler)
        library.setLevel(max(logging.WARNING, logger.level))  # their warnings, never their debug chatter
        library.propagate = False
    return LogSetup(logger, progress, handler, previous, tuple(libraries))
