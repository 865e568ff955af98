"""The temporary file a backup or restore writes before it is renamed into place, and those left behind.

It sits next to its target, named after it and the process writing it
(``.<target>.<pid>.<n>.tmp``), so that a rename puts it in place on the same file system. A
process killed before it removed its own (the machine shut down during the daily backup, a
``kill -9``) leaves one the size of the store: the next one written next to the same target
removes those whose process is gone (the daily backups' folder: those of any daily backup).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from postrun.errors import StoreError

_FILE_MODE = 0o600


@contextlib.contextmanager
def temporary_next_to(target: Path) -> Iterator[Path]:
    """An empty 0600 file in ``target``'s folder, removed unless the caller renamed it."""
    remove_abandoned(target.parent, re.escape(target.name))
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
        yield temporary
    finally:
        for leftover in (temporary, Path(f"{temporary}-journal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def remove_abandoned(folder: Path, targets: str) -> None:
    """Remove the temporary files (and their journals) in ``folder`` of the targets whose names
    match the regex ``targets`` and whose process is gone. One whose process runs (this one's,
    another backup's) is kept; one that cannot be looked at or removed is left for the next time."""
    named = re.compile(rf"\.(?:{targets})\.(\d+)\.\d+\.tmp(?:-journal)?")
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = named.fullmatch(entry.name)
            if found is not None and not _running(int(found.group(1))):
                with contextlib.suppress(OSError):
                    Path(entry.path).unlink()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM), or a number that is no process id: left alone
        return pid > 0
    return True
