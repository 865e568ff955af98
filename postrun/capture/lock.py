"""One capture per store: ``<db>.capture.lock``, held with ``flock`` for the process's life.

The kernel drops the lock when the process dies, so a crash never leaves a stale
lock behind. The file also tells ``postrun status`` (and ``--daemon``'s parent)
who holds it: pid, start time, last ingest, sessions watched and a re-flag's progress, as JSON.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import orjson

from postrun.errors import AlreadyRunning, PostrunError
from postrun.timestamps import utc_now

# A `status` probe holds a shared lock for an instant; a starting capture retries
# this long before it concludes that another capture is running.
_ACQUIRE_RETRY_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class CaptureInfo:
    pid: int
    started_at: str
    db: str
    last_ingest: str | None = None
    sessions_watched: int = 0
    reflag: str | None = None  # a background re-flag under way: "<done>/<total>" sessions

    @property
    def pid_text(self) -> str:
        """ "pid N"; "pid unknown" when the holder's status is empty (a full disk kept it from
        writing it, so its pid reads 0)."""
        return f"pid {self.pid}" if self.pid else "pid unknown"


class CaptureLock:
    """The lock a running capture holds; ``acquire`` raises AlreadyRunning (exit 75)."""

    def __init__(self, path: Path, *, db: Path, clock: Callable[[], str] = utc_now) -> None:
        self.path = path
        self.db = db
        self.clock = clock
        self._fd: int | None = None
        self.info: CaptureInfo | None = None

    def acquire(self) -> CaptureInfo:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise PostrunError(str(self.path), f"cannot open the capture lock ({exc.strerror or exc})") from None
        deadline = time.monotonic() + _ACQUIRE_RETRY_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                holder = _parse(os.pread(fd, 4096, 0))
                os.close(fd)
                pid = f" (pid {holder.pid})" if holder else ""
                raise AlreadyRunning(str(self.db), f"another capture is running{pid}") from None
        self._fd = fd
        self.info = CaptureInfo(pid=os.getpid(), started_at=self.clock(), db=str(self.db))
        self._write()
        return self.info

    def update_reflag(self, progress: str | None) -> None:
        """How far the background re-flag got (None: none under way)."""
        if self.info is not None and self.info.reflag != progress:
            self.info = replace(self.info, reflag=progress)
            self._write()

    def update(self, *, last_ingest: str | None = None, sessions_watched: int | None = None) -> None:
        if self.info is None:
            return
        changes: dict[str, object] = {}
        if last_ingest is not None:
            changes["last_ingest"] = last_ingest
        if sessions_watched is not None:
            changes["sessions_watched"] = sessions_watched
        self.info = replace(self.info, **changes)  # type: ignore[arg-type]
        self._write()

    def still_in_place(self) -> bool:
        """False when the lock file was removed or replaced (the store's folder was deleted, say):
        the flock then sits on a file no other capture can see, and guards nothing."""
        if self._fd is None:
            return False
        try:
            on_disk = self.path.stat()
        except OSError:
            return False
        held = os.fstat(self._fd)
        return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)

    def renew(self) -> None:
        """Take the lock again at ``path``, keeping what it records (after ``still_in_place`` was False).

        Raises AlreadyRunning when another capture took the store meanwhile.
        """
        previous, old_fd = self.info, self._fd
        self._fd, self.info = None, None
        try:
            self.acquire()
        finally:
            if old_fd is not None:
                os.close(old_fd)
        if previous is not None:
            self.info = previous
            self._write()

    def _write(self) -> None:
        assert self._fd is not None and self.info is not None
        content = orjson.dumps(asdict(self.info)) + b"\n"
        # Rewritten in place: replacing the file would leave our lock on an unlinked inode.
        try:
            os.pwrite(self._fd, content, 0)
            os.ftruncate(self._fd, len(content))
        except OSError:
            # A full disk: the flock alone guards the store, and what it records is only for
            # `status`, so capture goes on (and retries its store: README, Guarantees). An
            # emptied file reads as "running, unknown" rather than a dead capture's pid.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = None
        self.info = None

    def __enter__(self) -> CaptureLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _parse(content: bytes) -> CaptureInfo | None:
    try:
        data = orjson.loads(content)
        return CaptureInfo(**data)
    except (orjson.JSONDecodeError, TypeError):
        return None


def read_capture_info(path: Path) -> CaptureInfo | None:
    """Who holds the capture lock at ``path``, or None when no capture is running."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            # Held: a capture is running. Its JSON may be mid-rewrite; retry briefly.
            for _ in range(20):
                info = _parse(os.pread(fd, 4096, 0))
                if info is not None:
                    return info
                time.sleep(0.01)
            return CaptureInfo(pid=0, started_at="unknown", db="")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
