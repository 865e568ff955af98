"""Read one session's files: the transcript, its sub-agents' transcripts and sidecars, and
the large tool outputs Claude Code saved beside them.

Transcripts only grow, so each is read from where the last read stopped (``Mark``, kept
by the mapping cache): only the new bytes, after checking the last bytes before them.
Each file is fingerprinted before it is read, so a fingerprint never claims newer content
than what was parsed. The main transcript makes or breaks the session; a sub-agent's file
that cannot be read is that file's failure alone. Files read whole are handed on as read
(``SessionFiles.raw``), for the vault; a transcript read from a mark is read whole only when
the vault asks for it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from postrun.agents.claude_code.locate import (
    META_SUFFIX,
    OUTSIDE_ROOT,
    SUFFIX,
    SessionLocation,
    every_subagent_file,
    leads_outside,
    old_subagent_files,
    tool_result_files,
)
from postrun.agents.claude_code.strays import is_old_subagent
from postrun.appendonly import Appended, Mark, read_appended
from postrun.errors import NotFound, SourceError
from postrun.jsonio import parse_json, read_bytes, stat_fingerprint
from postrun.jsonl import parse_lines
from postrun.records import RawFile, SourceFile


@dataclass(frozen=True, slots=True)
class Subagent:
    """A sub-agent's transcript and sidecar as read (``transcript`` None: see ``error``)."""

    actor_id: str  # ``agent-<id>``, the transcript's stem
    path: Path
    transcript: Appended | None
    meta: dict[str, Any] | None  # None when there is none (or it is not an object)
    error: SourceError | None = None


@dataclass(frozen=True, slots=True)
class SessionFiles:
    """What one read of a session gave, with the fingerprints seen before each file was read."""

    location: SessionLocation
    main: Appended
    subagents: tuple[Subagent, ...] = ()
    source_files: tuple[SourceFile, ...] = ()  # every file the session was read from, main first
    whole: tuple[RawFile, ...] = ()  # the bytes of each file read whole
    unread: tuple[Path, ...] = ()  # files not read now (unchanged sidecars, tool outputs): the vault's only
    max_bytes: int = 0

    @property
    def raw(self) -> tuple[RawFile, ...]:
        """Every file of the session, for the vault (which takes a file left out as removed):
        those read whole as they were read; each transcript read from a mark (or not at all)
        read whole now, up to the length that was read (the records' bytes); the others now."""
        grown = [self.main, *(sub.transcript for sub in self.subagents if sub.transcript is not None)]
        copies = [copy for read in grown if read.start > 0 and (copy := _prefix(self.location, read)) is not None]
        others = [copy for path in self.unread if (copy := _whole(self.location, path, self.max_bytes))]
        return (*self.whole, *copies, *others)


def _prefix(location: SessionLocation, read: Appended) -> RawFile | None:
    """The first ``read.size`` bytes of a transcript that was read from a mark; None when it is
    not the file that was read any more (it was rewritten: the next read takes it whole)."""
    path = Path(read.fingerprint.path)
    try:
        data = read_bytes(path, max_bytes=2**62)[: read.size]
        now = stat_fingerprint(path)
    except (NotFound, SourceError):
        return None
    if now is None or now.ino != read.fingerprint.ino or len(data) < read.size or not data.endswith(read.data):
        return None
    return RawFile(location.relative(path), data, read.fingerprint)


def _whole(location: SessionLocation, path: Path, max_bytes: int) -> RawFile | None:
    """A file read whole (fingerprinted first); None when it is gone or cannot be used."""
    try:
        fingerprint = stat_fingerprint(path)
        if fingerprint is None or leads_outside(path, location):
            return None
        return RawFile(location.relative(path), read_bytes(path, max_bytes=max_bytes), fingerprint)
    except (NotFound, SourceError):
        return None


@dataclass(frozen=True, slots=True)
class ReadFrom:
    """What the last read of a session knew: where each transcript was used up to, and the
    session's workspace (an exclusion is checked before anything is read)."""

    marks: Mapping[str, Mark]  # by path
    workspace: str | None = None
    seen: Mapping[str, SourceFile] = field(default_factory=dict)  # each file's fingerprint when read
    metas: Mapping[str, dict[str, Any] | None] = field(default_factory=dict)  # sidecars as parsed, by path


NOTHING_READ = ReadFrom({})
HEAD_BYTES = 64 * 1024  # where the first user line (the workspace) is looked for before a whole read
Admit = Callable[[str], None]


def read_session(
    location: SessionLocation, *, max_bytes: int, since: ReadFrom = NOTHING_READ, admit: Admit | None = None
) -> SessionFiles:
    """Read a session's files, each transcript from its mark in ``since``.

    ``admit`` is given the session's workspace ("" when unknown) before the transcript is
    read beyond its first lines, and may refuse the session by raising (an excluded workspace).
    Raises ``SourceError`` when the transcript is missing, unusable or a symlink that leads
    outside the projects root (never followed out of it).
    """
    transcript = location.transcript
    where = str(transcript)
    if stat_fingerprint(transcript) is None:
        raise SourceError(where, "no transcript file")
    if leads_outside(transcript, location):
        raise SourceError(where, OUTSIDE_ROOT)
    mark = since.marks.get(where)
    if admit is not None:
        admit(since.workspace if mark is not None and since.workspace is not None else _head_workspace(transcript))
    try:
        main = read_appended(transcript, mark, max_bytes=max_bytes)
    except NotFound:
        raise SourceError(where, "no transcript file") from None
    reading = _Sides(location, max_bytes, since)
    reading.fingerprints.append(main.fingerprint)
    _keep_whole(location, main, reading.raw)
    subagents = []
    for actor_id, path, meta_path in every_subagent_file(location):
        subagent = reading.subagent(actor_id, path, meta_path)
        if subagent is not None:
            subagents.append(subagent)
    for path in tool_result_files(location):
        fingerprint = _stat(path)
        if fingerprint is not None:
            reading.fingerprints.append(fingerprint)
            reading.unread.append(path)
    return SessionFiles(
        location,
        main,
        tuple(subagents),
        tuple(reading.fingerprints),
        tuple(reading.raw),
        tuple(reading.unread),
        max_bytes,
    )


def _stat(path: Path) -> SourceFile | None:
    try:
        return stat_fingerprint(path)
    except SourceError:
        return None


def _head_workspace(transcript: Path) -> str:
    """The ``cwd`` of the first ``user`` line among the transcript's first bytes ("" if none)."""
    try:
        # Never blocks: a FIFO planted as a transcript is refused by the read that follows.
        fd = os.open(transcript, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""  # the read that follows reports it
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        head = os.read(fd, HEAD_BYTES)
    except OSError:
        return ""
    finally:
        os.close(fd)
    for _, record in parse_lines(head, 0).records:
        if record.get("type") == "user":
            cwd = record.get("cwd")
            return cwd if isinstance(cwd, str) else ""
    return ""


def _keep_whole(location: SessionLocation, read: Appended, raw: list[RawFile]) -> None:
    if read.start == 0:
        raw.append(RawFile(location.relative(Path(read.fingerprint.path)), read.data, read.fingerprint))


class _Sides:
    """The files beside the main transcript, read as they need to be: a sub-agent's transcript
    from its mark (not opened when unchanged), its sidecar when it changed."""

    def __init__(self, location: SessionLocation, max_bytes: int, since: ReadFrom) -> None:
        self.location = location
        self.max_bytes = max_bytes
        self.since = since
        self.raw: list[RawFile] = []
        self.fingerprints: list[SourceFile] = []
        self.unread: list[Path] = []
        # Whether the sub-agents' folder is inside the projects root (checked once a read).
        self.folder_inside = not leads_outside(location.subagents, location)

    def _outside(self, path: Path) -> bool:
        """A planted symlink: the file is one, or the folder it is in leads out of the root."""
        if not self.folder_inside:
            return leads_outside(path, self.location)
        try:
            return stat.S_ISLNK(os.lstat(path).st_mode) and leads_outside(path, self.location)
        except OSError:
            return False  # gone: its read says so

    def subagent(self, actor_id: str, path: Path, meta_path: Path) -> Subagent | None:
        """A sub-agent as read, or its failure; None when its file is gone."""
        meta = self._meta(meta_path)
        where = str(path)
        try:
            fingerprint = stat_fingerprint(path)
            if fingerprint is None:
                return None
            if self._outside(path):
                raise SourceError(where, OUTSIDE_ROOT)
            mark = self.since.marks.get(where)
            if mark is not None and self.since.seen.get(where) == fingerprint:
                transcript = Appended.unchanged(mark, fingerprint)
            else:
                transcript = read_appended(path, mark, max_bytes=self.max_bytes)
        except NotFound:
            return None
        except SourceError as exc:
            return Subagent(actor_id, path, None, meta, exc)
        self.fingerprints.append(transcript.fingerprint)
        _keep_whole(self.location, transcript, self.raw)
        return Subagent(actor_id, path, transcript, meta)

    def _meta(self, path: Path) -> dict[str, Any] | None:
        """A sub-agent's sidecar; None when there is none or it cannot be used (Claude Code
        replaces it whole, so a bad one is not a torn one: the sub-agent is kept without it)."""
        where = str(path)
        fingerprint = _stat(path)
        if fingerprint is None:
            return None
        if where in self.since.metas and self.since.seen.get(where) == fingerprint:
            self.fingerprints.append(fingerprint)
            self.unread.append(path)
            return self.since.metas[where]
        copy = _whole(self.location, path, self.max_bytes)
        if copy is None:
            return None
        self.raw.append(copy)
        self.fingerprints.append(copy.fingerprint)
        return _meta(copy.data, where)


def _meta(data: bytes, where: str) -> dict[str, Any] | None:
    try:
        meta = parse_json(data, where, "meta")
    except SourceError:
        return None
    return meta if isinstance(meta, dict) else None


def session_fingerprint(location: SessionLocation) -> tuple[SourceFile, ...]:
    """The fingerprints (stat only) of every file a read of the session would read: the
    transcript first (none at all when it is gone), then sub-agents, sidecars, tool outputs.

    Paths as strings, and the session's folder looked at only when it exists: a warm start
    fingerprints every session of the history, most of which have no folder."""
    base = f"{location.projects_root}{os.sep}{location.slug}{os.sep}{location.session_id}"
    lead = _stat_text(f"{base}{SUFFIX}")
    if lead is None:
        return ()
    try:
        has_folder = stat.S_ISDIR(os.stat(base).st_mode)  # noqa: PTH116 - a string: no Path per session
    except OSError:
        has_folder = False
    # Sub-agents of the layout before 2.1 are beside the transcript, not in its folder.
    subagents = every_subagent_file(location) if has_folder else old_subagent_files(location)
    found = [lead]
    others: list[Path] = []
    for _, path, meta_path in subagents:
        others.extend((path, meta_path))
    if has_folder:
        others.extend(tool_result_files(location))
    found.extend(fingerprint for path in others if (fingerprint := _stat(path)) is not None)
    return tuple(found)


def _stat_text(path: str) -> SourceFile | None:
    try:
        found = os.stat(path)  # noqa: PTH116
    except OSError:
        return None
    return SourceFile(path, found.st_size, found.st_mtime_ns, found.st_ino)


def files_from_copies(location: SessionLocation, copies: Sequence[RawFile]) -> SessionFiles:
    """A session's files as the vault kept them (``RawFile.fingerprint.path`` is where each
    was read from): the same ``SessionFiles`` a read of those bytes gives."""
    by_path = {copy.fingerprint.path: copy for copy in copies}
    main = by_path.get(str(location.transcript))
    if main is None:
        raise SourceError(str(location.transcript), "the raw copies hold no transcript")
    subagents: list[Subagent] = []
    prefix = f"{location.subagents}{os.sep}agent-"
    for path in sorted(by_path):
        old = Path(path).parent == location.source and is_old_subagent(Path(path).name)
        if not (old or (path.startswith(prefix) and path.endswith(SUFFIX))):
            continue
        actor_id = Path(path).name.removesuffix(SUFFIX)
        meta_copy = by_path.get(str(location.subagents / f"{actor_id}{META_SUFFIX}"))
        meta = _meta(meta_copy.data, meta_copy.fingerprint.path) if meta_copy is not None else None
        copy = by_path[path]
        subagents.append(Subagent(actor_id, Path(path), Appended.whole(copy.data, copy.fingerprint), meta))
    return SessionFiles(
        location,
        Appended.whole(main.data, main.fingerprint),
        tuple(subagents),
        tuple(copy.fingerprint for copy in copies),
        tuple(copies),
    )
