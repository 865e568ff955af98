"""Read one JSON file that another program may be rewriting, safely.

Agents rewrite their files in place, so a reader can catch a file empty, half
written, or holding a complete new value followed by a stale tail of the old one.
Special files are refused without being opened for reading, so a FIFO or a device
planted where a session file should be can never block or flood the reader.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import orjson

from postrun.errors import NotFound, NotParseableYet, SourceError, Unreadable
from postrun.records import SourceFile

ORJSON_MAX_DEPTH = 1024  # orjson refuses deeper documents
# Source files larger than this are refused unless the settings say otherwise (``max_file_mb``);
# here, as an ingest process that prepares sessions before the settings reach it reads by it too.
MAX_FILE_MB = 512
_TOO_DEEP = f"nested deeper than {ORJSON_MAX_DEPTH} levels"
_TRAILING = "unexpected content after document"
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_OPEN_ATTEMPTS = 3  # a file replaced by rename between stat and open is opened again
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_FILE_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISLNK, "symlink"),
)


def read_json(path: Path, *, kind: str, max_bytes: int, follow_symlinks: bool = True) -> Any:
    """Parse the JSON value in ``path``.

    Raises ``NotFound`` when the file does not exist, ``SourceError`` when it is not a
    regular file, is larger than ``max_bytes``, cannot be read or is nested too deep,
    and ``NotParseableYet`` (naming ``kind``, e.g. ``messages``) when it is empty or
    does not parse. Pass ``follow_symlinks=False`` when the caller already resolved
    symlinks: the file is then opened with ``O_NOFOLLOW``.
    """
    return parse_json(read_bytes(path, max_bytes=max_bytes, follow_symlinks=follow_symlinks), str(path), kind)


def read_bytes(path: Path, *, max_bytes: int, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (errors as for ``read_json``)."""
    where = str(path)
    for _ in range(_OPEN_ATTEMPTS):
        expected = _regular_stat(path, where, max_bytes, follow_symlinks)
        flags = _OPEN_FLAGS if follow_symlinks else _OPEN_FLAGS | os.O_NOFOLLOW
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise NotFound(where, "no such file") from None
        except PermissionError as exc:
            raise Unreadable(where, f"cannot open: {exc.strerror or exc}") from None
        except OSError as exc:
            raise SourceError(where, f"cannot open: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if (opened.st_dev, opened.st_ino) != (expected.st_dev, expected.st_ino):
                continue  # replaced between stat and open (e.g. a tmp+rename write)
            _check_size(opened.st_size, where, max_bytes)
            try:
                data = handle.read()
            except OSError as exc:
                raise SourceError(where, f"cannot read: {exc.strerror or exc}") from None
        _check_size(len(data), where, max_bytes)  # it may have grown since fstat
        return data
    raise SourceError(where, "kept being replaced while it was opened")


def _regular_stat(path: Path, where: str, max_bytes: int, follow_symlinks: bool) -> os.stat_result:
    try:
        found = path.lstat()
        if follow_symlinks and stat.S_ISLNK(found.st_mode):
            found = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(where, "no such file") from None
    except OSError as exc:
        raise SourceError(where, f"cannot stat: {exc.strerror or exc}") from None
    if not stat.S_ISREG(found.st_mode):
        raise SourceError(where, f"not a regular file ({_file_kind(found.st_mode)})")
    _check_size(found.st_size, where, max_bytes)
    return found


def _file_kind(mode: int) -> str:
    for test, name in _FILE_KINDS:
        if test(mode):
            return name
    return "special file"


def _check_size(size: int, where: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise SourceError(where, f"larger than {max_bytes // 2**20} MB (max_file_mb)")


def parse_json(data: bytes, where: str, kind: str, *, lenient: bool = True) -> Any:
    """Parse ``data``: the first complete JSON value wins; see ``read_json`` for errors.

    Text that is not valid UTF-8, or that holds lone surrogate escapes, is decoded
    leniently: bad bytes and lone surrogates become U+FFFD, so every string of the
    result can be encoded as UTF-8 again. With ``lenient=False`` it raises ``SourceError``
    instead (the lenient decoder reads some numbers otherwise than the strict one).
    """
    if not data or data.isspace():
        raise NotParseableYet(where, kind, "empty file")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if exc.msg == _TRAILING:
            # A complete new value followed by a stale tail of the old file.
            return parse_json(data[: _byte_offset(data, exc.pos)], where, kind, lenient=lenient)
        if "depth limit" in exc.msg:
            raise SourceError(where, _TOO_DEEP) from None
        if "UTF-8" in exc.msg or "surrogate" in exc.msg:
            if not lenient:
                raise SourceError(where, f"not strictly readable ({exc.msg})") from None
            return _parse_lenient(data, where, kind)
        raise _failure(data, where, kind, f"{exc.msg} at character {exc.pos}") from None


def _failure(data: bytes, where: str, kind: str, detail: str) -> SourceError:
    """A file that does not parse: torn (caught mid-write: retry later) or simply not JSON.

    Cline writes one object (or, in old files, a list) in place, so a file caught
    mid-write starts like one; anything else will not parse next time either.
    """
    if data.lstrip()[:1] not in (b"{", b"["):
        return SourceError(where, f"not a JSON file ({detail})")
    if "infinity" in detail:
        return SourceError(where, f"not valid JSON ({detail})")
    return NotParseableYet(where, kind, detail)


def _byte_offset(data: bytes, char_pos: int) -> int:
    """orjson reports positions in characters; slicing needs bytes."""
    if data.isascii():
        return char_pos
    return len(data.decode("utf-8")[:char_pos].encode("utf-8"))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_lenient(data: bytes, where: str, kind: str) -> Any:
    text = data.decode("utf-8", "replace")
    start = len(text) - len(text.lstrip())
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    try:
        value, _end = decoder.raw_decode(text, start)
        return _without_lone_surrogates(value)
    except RecursionError:
        raise SourceError(where, _TOO_DEEP) from None
    except json.JSONDecodeError as exc:
        raise _failure(data, where, kind, f"{exc.msg} at character {exc.pos}") from None
    except ValueError as exc:
        raise _failure(data, where, kind, str(exc)) from None


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(key): _without_lone_surrogates(item) for key, item in value.items()}
    return value


def stat_fingerprint(path: Path) -> SourceFile | None:
    """Size, mtime and inode of ``path`` (following symlinks); None when it is missing."""
    try:
        found = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SourceError(str(path), f"cannot stat: {exc.strerror or exc}") from None
    return SourceFile(str(path), found.st_size, found.st_mtime_ns, found.st_ino)
