"""Sub-agent transcripts in the layout of Claude Code before 2.1: ``agent-<id>.jsonl`` right
in a project folder, beside the sessions, instead of in ``<session id>/subagents/``.

Such a file is never a session of its own (claude-code.md §1: "Sub-agents are never sessions
of their own"); its lines carry its parent's ``sessionId``, which names the session it is a
helper of. It has no ``meta.json``, so its steps go where an unlinked sub-agent's go (§7a).

Which session each one belongs to is read from its first lines once per version of the
folder's listing: a session's read asks for its helpers without opening them all again.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from postrun.jsonio import MAX_FILE_MB
from postrun.jsonl import parse_lines

PREFIX = "agent-"
SUFFIX = ".jsonl"
CHUNK_BYTES = 64 * 1024  # read at a time until a complete line names the session
# A folder changed this recently may change again within the same timestamp tick, unseen by
# its mtime: its listing is not kept (git's "racily clean" rule).
_RACY_NS = 2 * 10**9


def is_old_subagent(name: str) -> bool:
    """An ``agent-<id>.jsonl`` name: a sub-agent's transcript, never a session's."""
    return name.startswith(PREFIX) and name.endswith(SUFFIX) and len(name) > len(PREFIX) + len(SUFFIX)


def session_named(head: bytes) -> str | None:
    """The ``sessionId`` of the first complete line that has one (None: none yet)."""
    for _, record in parse_lines(head[: head.rfind(b"\n") + 1], 0).records:
        session_id = record.get("sessionId")
        if isinstance(session_id, str) and session_id:
            return session_id
    return None


def named_session(path: Path) -> str | None:
    """The session a sub-agent's transcript names; None when it names none (yet) or cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO never blocks
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return _first_named(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def _first_named(fd: int) -> str | None:
    """``session_named`` over the file's complete lines, read a chunk at a time until one names
    the session: a first line may be longer than any head (a sub-agent's long prompt), and its
    steps would be lost with the file left out of its session. No further than the largest file
    read (``max_file_mb``'s default)."""
    pending = bytearray()  # the last line read so far, not complete yet
    for _ in range(MAX_FILE_MB * 2**20 // CHUNK_BYTES):
        chunk = os.read(fd, CHUNK_BYTES)
        if not chunk:
            return None
        last = chunk.rfind(b"\n")
        if last < 0:
            pending += chunk
            continue
        found = session_named(bytes(pending) + chunk[: last + 1])
        if found is not None:
            return found
        pending = bytearray(chunk[last + 1 :])
    return None


@dataclass(slots=True)
class _Folder:
    stamp: tuple[int, int]  # the folder's (mtime, inode) when listed
    owners: dict[str, str]  # file name -> the session it names
    unnamed: list[str]  # files whose first lines name no session yet: read again when asked


_LISTED: dict[str, _Folder] = {}


def old_subagents(folder: Path, session_id: str) -> tuple[str, ...]:
    """The names of the ``agent-*.jsonl`` files of project folder ``folder`` that name session
    ``session_id``, sorted (which names are safe to use is the caller's to check)."""
    key = os.fspath(folder)
    try:
        found = os.stat(key)  # noqa: PTH116 - a string: the key the listing is kept under
    except OSError:
        return ()
    stamp = (found.st_mtime_ns, found.st_ino)
    listed = _LISTED.get(key)
    if listed is None or listed.stamp != stamp:
        try:
            names = sorted(name for name in os.listdir(key) if is_old_subagent(name))  # noqa: PTH208
        except OSError:
            return ()
        listed = _Folder(stamp, {}, names)
        if found.st_mtime_ns < time.time_ns() - _RACY_NS:
            _LISTED[key] = listed
        else:
            _LISTED.pop(key, None)
    if listed.unnamed:
        still: list[str] = []
        for name in listed.unnamed:
            owner = named_session(folder / name)
            if owner is None:
                still.append(name)
            else:
                listed.owners[name] = owner
        listed.unnamed = still
    return tuple(name for name, owner in sorted(listed.owners.items()) if owner == session_id)
