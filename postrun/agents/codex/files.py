"""Reading rollouts: the bytes a fold needs, and nothing more when a rollout only grew.

I/O at the edge. A plain rollout read after an earlier fold (``since``: where it stopped and
the bytes just before) is read from there when the file still holds those bytes at that
place; otherwise, and for a compressed rollout (``.jsonl.zst``, decompressed whole), the
fold starts over from the first byte. Special files are refused without being read, so a
FIFO planted where a rollout should be can never block the reader.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import zstandard

from postrun.errors import NotFound, SourceError
from postrun.records import SourceFile

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_READ_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Rollout:
    """One rollout file: whose thread it is and where."""

    thread_id: str
    path: Path
    compressed: bool = False  # ``.jsonl.zst``
    archived: bool = False  # under ``archived_sessions/``


@dataclass(frozen=True, slots=True)
class RolloutData:
    """What was read of a rollout: its JSONL from byte ``start`` on (decompressed)."""

    rollout: Rollout
    data: bytes
    start: int
    fingerprint: SourceFile
    raw: bytes | None = None  # the file exactly as on disk, when it was read whole


@dataclass(frozen=True, slots=True)
class SessionFiles:
    """A session's rollouts as read: the root thread's, then its children's."""

    root: RolloutData
    children: tuple[RolloutData, ...] = ()
    unread: tuple[SourceError, ...] = ()  # children that could not be read this time


def read_rollout(rollout: Rollout, *, max_bytes: int, since: tuple[int, bytes] = (0, b"")) -> RolloutData:
    """Read ``rollout``; from ``since`` on when it still continues what was folded there.

    Raises ``NotFound`` when it is gone, ``SourceError`` when it is not a regular file, is
    larger than ``max_bytes`` (decompressed, for a compressed one) or cannot be read or
    decompressed.
    """
    where = str(rollout.path)
    fd = _open_regular(rollout.path)
    try:
        found = os.fstat(fd)
        _check_size(found.st_size, where, max_bytes)
        fingerprint = SourceFile(where, found.st_size, found.st_mtime_ns, found.st_ino)
        offset, tail = since
        if not rollout.compressed:
            if 0 < offset <= found.st_size and _pread(fd, len(tail), offset - len(tail), where) == tail:
                return RolloutData(rollout, _read_from(fd, offset, where, max_bytes), offset, fingerprint)
            raw = _read_from(fd, 0, where, max_bytes)
            return RolloutData(rollout, raw, 0, fingerprint, raw)
        raw = _read_from(fd, 0, where, max_bytes)
    finally:
        os.close(fd)
    data = decompressed(raw, where, max_bytes)
    if 0 < offset <= len(data) and data[offset - len(tail) : offset] == tail:
        return RolloutData(rollout, data[offset:], offset, fingerprint, raw)
    return RolloutData(rollout, data, 0, fingerprint, raw)


def decompressed(raw: bytes, where: str, max_bytes: int) -> bytes:
    """The JSONL a ``.jsonl.zst`` holds (every frame), at most ``max_bytes`` of it."""
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        data = reader.read(max_bytes + 1)
    except zstandard.ZstdError as exc:
        raise SourceError(where, f"cannot decompress: {exc}") from None
    _check_size(len(data), where, max_bytes)
    return data


def head(rollout: Rollout, *, max_bytes: int) -> bytes:
    """The rollout's first line (its ``session_meta``), or as much of it as is written."""
    where = str(rollout.path)
    fd = _open_regular(rollout.path)
    try:
        if rollout.compressed:
            with os.fdopen(os.dup(fd), "rb") as handle:
                try:
                    reader = zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True)
                    return _first_line(reader.read, max_bytes)
                except zstandard.ZstdError as exc:
                    raise SourceError(where, f"cannot decompress: {exc}") from None
        return _first_line(lambda size: os.read(fd, size), max_bytes)
    except OSError as exc:
        raise SourceError(where, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _open_regular(path: Path) -> int:
    """A descriptor of ``path`` when it is a regular file (opened without blocking on a FIFO)."""
    where = str(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(where, "no such file") from None
    except OSError as exc:
        raise SourceError(where, f"cannot open: {exc.strerror or exc}") from None
    try:
        is_regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError as exc:
        os.close(fd)
        raise SourceError(where, f"cannot stat: {exc.strerror or exc}") from None
    if not is_regular:
        os.close(fd)
        raise SourceError(where, "not a regular file")
    return fd


def _first_line(read: Callable[[int], bytes], max_bytes: int) -> bytes:
    pieces: list[bytes] = []
    total = 0
    while total <= max_bytes:
        piece = read(_READ_CHUNK // 16)
        if not piece:
            break
        newline = piece.find(b"\n")
        if newline >= 0:
            pieces.append(piece[: newline + 1])
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def _pread(fd: int, size: int, offset: int, where: str) -> bytes:
    try:
        return os.pread(fd, size, offset) if size else b""
    except OSError as exc:
        raise SourceError(where, f"cannot read: {exc.strerror or exc}") from None


def _read_from(fd: int, offset: int, where: str, max_bytes: int) -> bytes:
    pieces: list[bytes] = []
    total = offset
    try:
        while True:
            piece = os.pread(fd, _READ_CHUNK, total)
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
            _check_size(total, where, max_bytes)  # it may grow while it is read
    except OSError as exc:
        raise SourceError(where, f"cannot read: {exc.strerror or exc}") from None
    return b"".join(pieces)


def _check_size(size: int, where: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise SourceError(where, f"larger than {max_bytes // 2**20} MB (max_file_mb)")
