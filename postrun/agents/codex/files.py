"""Reading rollouts: the bytes a fold needs, and nothing more when a rollout only grew.

I/O at the edge. A plain rollout is read from its ``Mark`` (``postrun.appendonly``: only the
bytes after where the last fold stopped, once the bytes before it are checked); a rewritten
one is read whole. A compressed rollout (``.jsonl.zst``) is decompressed whole, and its fold
goes on from the mark when the JSONL still holds the marked bytes there: a rollout Codex
compressed in place is the same thread, read on. Each file is fingerprinted before it is
read. A symlink is followed only inside the folder its rollout was found in.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

import zstandard

from postrun.agents.codex.layout import Rollout, SessionLocation
from postrun.agents.codex.locate import OUTSIDE
from postrun.appendonly import Appended, Mark, read_appended
from postrun.errors import NotFound, SourceError, Unreadable
from postrun.jsonio import read_bytes, stat_fingerprint
from postrun.records import RawFile, SourceFile

_HEAD_CHUNK = 64 * 1024
_UNPACK_CHUNK = 4 * 2**20


@dataclass(frozen=True, slots=True)
class RolloutData:
    """What was read of a rollout: its JSONL (decompressed) from ``read.start`` on."""

    rollout: Rollout
    read: Appended
    raw: bytes | None = None  # the file as on disk when it was read whole (compressed, for a .zst)

    def copy(self) -> RawFile | None:
        """The file for the vault: as read, or (read from a mark) read whole now up to the
        length the records came from; None when it is no longer that file."""
        if self.raw is not None:
            return RawFile(self.rollout.vault_name, self.raw, self.read.fingerprint)
        path = self.rollout.path
        try:
            data = read_bytes(path, max_bytes=2**62)[: self.read.size]
            now = stat_fingerprint(path)
        except (NotFound, SourceError):
            return None
        if now is None or now.ino != self.read.fingerprint.ino or not data.endswith(self.read.data):
            return None
        return RawFile(self.rollout.vault_name, data, self.read.fingerprint)


@dataclass(frozen=True, slots=True)
class SessionFiles:
    """A session's rollouts as read: the root thread's, then its children's."""

    location: SessionLocation
    root: RolloutData
    children: tuple[RolloutData, ...] = ()
    unread: tuple[SourceError, ...] = ()  # children that could not be read this time

    @property
    def source_files(self) -> tuple[SourceFile, ...]:
        """The fingerprint of each rollout read, the root's first."""
        return tuple(data.read.fingerprint for data in (self.root, *self.children))

    @property
    def raw(self) -> tuple[RawFile, ...]:
        """Every rollout, for the vault: as read, or read whole now when read from a mark."""
        return tuple(copy for data in (self.root, *self.children) if (copy := data.copy()) is not None)


def read_rollout(
    rollout: Rollout, *, max_bytes: int, mark: Mark | None = None, seen: SourceFile | None = None
) -> RolloutData:
    """Read ``rollout``; from ``mark`` on when it still continues what was folded there.
    ``seen``: its fingerprint when it was read up to ``mark``; a plain rollout still so, whose
    fold took every byte of it, is not opened (a session's re-ingest stats its many finished
    sub-agents' rollouts, nothing more). One whose last line was not complete is read on from
    the mark, so that line is still said to be incomplete and its copy is of the whole file.

    Raises ``NotFound`` when it is gone, ``SourceError`` when it is not a regular file, is
    larger than ``max_bytes`` (decompressed, for a compressed one), cannot be read or
    decompressed, or is a symlink leading outside its folder.
    """
    _refuse_outside(rollout)
    if not rollout.compressed:
        if mark is not None and seen is not None:
            now = stat_fingerprint(rollout.path)
            if now is None:
                raise NotFound(str(rollout.path), "no such file")
            if now == seen and now.size == mark.end:
                return RolloutData(rollout, Appended.unchanged(mark, now))
        read = read_appended(rollout.path, mark, max_bytes=max_bytes)
        return RolloutData(rollout, read, read.data if read.start == 0 else None)
    packed = read_appended(rollout.path, None, max_bytes=max_bytes)
    data = decompressed(packed.data, str(rollout.path), max_bytes)
    whole = Appended.whole(data, packed.fingerprint)
    if mark is not None and 0 < mark.end <= len(data) and whole.mark(mark.end).tail == mark.tail:
        return RolloutData(rollout, Appended(0, mark.end, data, packed.fingerprint), packed.data)
    return RolloutData(rollout, whole, packed.data)


def decompressed(raw: bytes, where: str, max_bytes: int) -> bytes:
    """The JSONL a ``.jsonl.zst`` holds (every frame), at most ``max_bytes`` of it."""
    chunks: list[bytes] = []
    size = 0
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        # In bounded chunks: ``read(n)`` allocates n bytes up front, and the vault's copies
        # are read back with no limit (they were admitted when first read).
        while size <= max_bytes and (chunk := reader.read(min(_UNPACK_CHUNK, max_bytes + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    except zstandard.ZstdError as exc:
        raise SourceError(where, f"cannot decompress: {exc}") from None
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise SourceError(where, f"larger than {max_bytes // 2**20} MB decompressed (max_file_mb)")
    return data


def head(rollout: Rollout, *, max_bytes: int) -> bytes:
    """The rollout's first line (its ``session_meta``), or as much of it as is written."""
    _refuse_outside(rollout)
    where = str(rollout.path)
    try:
        fd = os.open(rollout.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO never blocks
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(where, "no such file") from None
    except PermissionError as exc:
        raise Unreadable(where, f"cannot open: {exc.strerror or exc}") from None
    except OSError as exc:
        raise SourceError(where, f"cannot open: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise SourceError(where, "not a regular file")
            if rollout.compressed:
                reader = zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True)
                return _first_line(reader.read, max_bytes)
            return _first_line(handle.read, max_bytes)
    except zstandard.ZstdError as exc:
        raise SourceError(where, f"cannot decompress: {exc}") from None
    except OSError as exc:
        raise SourceError(where, f"cannot read: {exc.strerror or exc}") from None


def _first_line(read: Callable[[int], bytes], max_bytes: int) -> bytes:
    pieces: list[bytes] = []
    total = 0
    while total <= max_bytes:
        piece = read(_HEAD_CHUNK)
        if not piece:
            break
        newline = piece.find(b"\n")
        if newline >= 0:
            pieces.append(piece[: newline + 1])
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def _refuse_outside(rollout: Rollout) -> None:
    folder = rollout.folder
    if folder is None or not rollout.path.is_symlink():
        return
    try:
        target = rollout.path.resolve()
        inside = target.is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        raise SourceError(str(rollout.path), OUTSIDE)
