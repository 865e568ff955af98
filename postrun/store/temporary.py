"""The temporary file a backup or restore writes before it is renamed into place, and those left behind.

It sits next to its target, named after it and the process writing it
(``.<target>.<pid>.<n>.tmp``), so that a rename puts it in place on the same file system. A
process killed before it removed its own (the machine shut down during the daily backup, a
``kill -9``) leaves one the size of the store: the next one written next to the same target
removes those whose process is gone (the daily backups' folder: those of any daily backup).
A process this one cannot see (in a container, on another machine sharing the folder) may
still be writing one: only those unchanged for ``ABANDONED_AFTER_SECONDS`` are removed.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from postrun.errors import StoreError

_FILE_MODE = 0o600
# A backup writes its copy and checks it within minutes even for a store of gigabytes.
ABANDONED_AFTER_SECONDS = 3600.0


@contextlib.contextmanager
def temporary_next_to(target: Path) -> Iterator[Path]:
    """An empty 0600 file in ``target``'s folder, removed unless the caller renamed it."""
    for attempt in range(100):
        temporary = target.with_name(f".{target.name}.{os.getpid()}.{attempt}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, _FILE_MODE)
        except FileExistsError:
            continue
        except OSError as exc:
            raise StoreError(str(target), f"cannot write the backup ({exc.strerror or exc})") from None
        os.close(fd)
        break
    else:
        raise StoreError(str(target), "cannot write the backup (no free temporary name)")
    try:
        # Its own time, by the folder's clock, says what is old there.
        remove_abandoned(target.parent, re.escape(target.name), now=temporary.stat().st_mtime)
        yield temporary
    finally:
        for leftover in (temporary, Path(f"{temporary}-journal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def remove_abandoned(folder: Path, targets: str, *, now: float) -> None:
    """Remove the temporary files (and their journals) in ``folder`` of the targets whose names
    match the regex ``targets``, whose process is gone and which have not changed for
    ``ABANDONED_AFTER_SECONDS`` before ``now`` (a time in seconds since the epoch). Any other is
    kept; one that cannot be looked at or removed is left for the next time."""
    named = re.compile(rf"\.(?:{targets})\.([0-9]{{1,10}})\.[0-9]+\.tmp(?:-journal)?")
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = named.fullmatch(entry.name)
            if found is None or _running(int(found.group(1))):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime <= now - ABANDONED_AFTER_SECONDS:
                    Path(entry.path).unlink()


def _running(pid: int) -> bool:
    """Whether process ``pid`` may be running: seen, another user's (EPERM), or a number no
    process has (too large for one: not a temporary file of ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        pass
    return True
