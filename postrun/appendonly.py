"""Reading a file its writer only appends to: the bytes after what was read before.

A ``Mark`` is how far a file was read: the length taken, a digest of the last bytes of
that prefix and the file's inode. Reading from a mark re-reads only those last bytes
(to check them) and what follows; the cost of one new line in a 50 MB transcript is that
line, not the file. A file that is shorter than the mark, is another file (inode), or
whose bytes before the mark differ from the digest was rewritten, not appended to: it is
read whole, and ``Appended.start`` is 0, so the caller starts again from the beginning.

Marks are taken where the caller stopped using the bytes (after the last complete
line, say), which may be before the end of what was read: an incomplete tail is read
again next time, with whatever was added to it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from postrun.errors import NotFound, SourceError, Unreadable
from postrun.records import SourceFile

TAIL_BYTES = 4096  # how much of the prefix is checked again before reading on
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def _tail_digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class Mark:
    """A prefix of a file that was read and used: its length, its tail's digest, the inode."""

    end: int
    tail: bytes
    ino: int


@dataclass(frozen=True, slots=True)
class Appended:
    """What a read from a mark gave: ``data`` begins at ``origin`` in the file; the new bytes
    begin at ``start`` (0 when the file was read whole); the bytes between were checked."""

    origin: int
    start: int
    data: bytes
    fingerprint: SourceFile  # as seen before the read (never newer than the bytes read)
    kept: Mark | None = None  # the mark it was not read from, as the file had not changed

    @property
    def new(self) -> memoryview:
        """The bytes from ``start`` to the end of what was read."""
        return memoryview(self.data)[self.start - self.origin :]

    @property
    def size(self) -> int:
        """The file's length as read."""
        return self.origin + len(self.data)

    def mark(self, end: int) -> Mark:
        """A mark at ``end`` (from ``start`` to ``size``): the next read starts there."""
        if self.kept is not None and end == self.kept.end:
            return self.kept
        if not self.start <= end <= self.size:
            raise ValueError(f"mark at {end} outside the bytes read ({self.start}..{self.size})")
        first = max(0, end - TAIL_BYTES)
        if first < self.origin:
            raise ValueError(f"mark at {end} needs bytes from {first}, read from {self.origin}")
        view = memoryview(self.data)[first - self.origin : end - self.origin]
        return Mark(end, _tail_digest(view), self.fingerprint.ino)

    @classmethod
    def whole(cls, data: bytes, fingerprint: SourceFile) -> Appended:
        """A file read whole, by whoever read it."""
        return cls(0, 0, data, fingerprint)

    @classmethod
    def unchanged(cls, mark: Mark, fingerprint: SourceFile) -> Appended:
        """Nothing new after ``mark``: a file whose fingerprint is the one seen when it was last
        read up to there (not opened at all)."""
        return cls(mark.end, mark.end, b"", fingerprint, mark)


def read_appended(path: Path, mark: Mark | None, *, max_bytes: int) -> Appended:
    """The bytes of ``path`` after ``mark`` (all of them without a mark, or when the file was
    rewritten). Raises ``NotFound`` when it is missing and ``SourceError`` when it is not a
    regular file, is larger than ``max_bytes`` or cannot be read."""
    where = str(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(where, "no such file") from None
    except PermissionError as exc:
        raise Unreadable(where, f"cannot open: {exc.strerror or exc}") from None
    except OSError as exc:
        raise SourceError(where, f"cannot open: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise SourceError(where, "not a regular file")
        if found.st_size > max_bytes:
            raise SourceError(where, f"larger than {max_bytes // 2**20} MB (max_file_mb)")
        fingerprint = SourceFile(where, found.st_size, found.st_mtime_ns, found.st_ino)
        try:
            if mark is not None and mark.end > 0 and found.st_ino == mark.ino and found.st_size >= mark.end:
                origin = max(0, mark.end - TAIL_BYTES)
                data = _read_from(handle.fileno(), origin)
                checked = mark.end - origin
                if len(data) >= checked and _tail_digest(memoryview(data)[:checked]) == mark.tail:
                    return Appended(origin, mark.end, data, fingerprint)
            data = _read_from(handle.fileno(), 0)
        except OSError as exc:
            raise SourceError(where, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # it grew since fstat
        raise SourceError(where, f"larger than {max_bytes // 2**20} MB (max_file_mb)")
    return Appended(0, 0, data, fingerprint)


def _read_from(fd: int, offset: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
