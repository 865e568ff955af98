"""Read one session's files: the lead transcript, its manifest, its helpers' transcripts
and the compaction sidecar.

Every file is fingerprinted before it is read, so a fingerprint never claims newer
content than what was parsed (a change during the read only causes one more ingest
later). The bytes parsed are handed on as read (``SessionFiles.raw``), for the vault: a
file is never read twice. The lead transcript and the manifest make or break the
session; a helper's transcript or the sidecar that cannot be read is that file's failure alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from postrun.agents.cline.layout import ByteLayout, KnownMessages, parse_without_known
from postrun.agents.cline.locate import (
    MESSAGES_SUFFIX,
    OUTSIDE_ROOT,
    SessionLocation,
    folder_files,
    helper_transcripts,
    leads_outside,
)
from postrun.errors import NotFound, SourceError
from postrun.jsonio import parse_json, read_bytes, stat_fingerprint
from postrun.records import RawFile, SourceFile


@dataclass(frozen=True, slots=True)
class SideFile:
    """A helper's transcript or the compaction sidecar: parsed, or why it could not be."""

    name: str  # the helper's actor id (the file's stem), or "compaction"
    path: Path
    document: Any  # as parsed; None when ``error`` is set
    error: SourceError | None = None
    fingerprint: SourceFile | None = None  # as seen before the read; None when it failed


@dataclass(frozen=True, slots=True)
class SessionFiles:
    """The parsed files of one session, with the fingerprints seen when they were read."""

    location: SessionLocation
    messages: Any  # the messages document as parsed (shape checked by the mapping)
    manifest: dict[str, Any] | None  # None when the session has no manifest file
    source_files: tuple[SourceFile, ...]  # messages first, then the manifest and the side files read
    raw: tuple[RawFile, ...] = ()  # the bytes of each file parsed, in the same order
    helpers: tuple[SideFile, ...] = ()  # by actor id
    compaction: SideFile | None = None
    known: KnownMessages | None = None  # set when ``messages`` was parsed without the known messages

    @property
    def client_source(self) -> str | None:
        """Which Cline client wrote the session (``cli``, ``vscode``, ...), when known."""
        origin = self.messages.get("origin") if isinstance(self.messages, dict) else None
        for holder in (self.manifest, origin):
            if isinstance(holder, dict) and isinstance(holder.get("source"), str):
                return str(holder["source"])
        return None


def read_session(
    location: SessionLocation,
    *,
    max_bytes: int,
    known: ByteLayout | None = None,
    admit: Callable[[dict[str, Any] | None], None] | None = None,
) -> SessionFiles:
    """Read and parse a session's files.

    ``known`` is the last pass's layout of the messages file (``TranscriptResume.layout``):
    when the file still begins its messages with those bytes, only what follows is parsed
    (``SessionFiles.known``), the vault still gets the whole file. ``admit`` is given the
    manifest (None: there is none) before any transcript is read, and may refuse the session
    by raising (an excluded workspace): its transcripts are then never read.

    Raises ``SourceError`` when the messages file is missing or unusable, when either
    file is a symlink that leads outside the sessions root (never followed out of it) or
    the manifest is not an object, and ``NotParseableYet`` (kind ``messages`` or
    ``manifest``) when either file is caught empty or half written.
    """
    messages_fingerprint = stat_fingerprint(location.messages)
    if messages_fingerprint is None:
        raise SourceError(str(location.messages), "no messages file")
    _refuse_outside(location, location.messages)
    manifest: dict[str, Any] | None = None
    manifest_raw: list[RawFile] = []
    source_files = [messages_fingerprint]
    manifest_fingerprint = stat_fingerprint(location.manifest)
    if manifest_fingerprint is not None:
        _refuse_outside(location, location.manifest)
        try:
            parsed = _read(location, location.manifest, manifest_fingerprint, "manifest", max_bytes, manifest_raw)
        except NotFound:
            parsed = None  # removed between stat and read: as if it never existed
        else:
            if not isinstance(parsed, dict):
                raise SourceError(str(location.manifest), "wrong shape: top level: expected an object")
            manifest = parsed
            source_files.append(manifest_fingerprint)
    if admit is not None:
        admit(manifest)
    raw: list[RawFile] = []
    try:
        messages, cut = _read_messages(location, messages_fingerprint, max_bytes, raw, known)
    except NotFound:
        raise SourceError(str(location.messages), "no messages file") from None
    raw.extend(manifest_raw)  # in the order the vault has always had them: messages first
    helpers = tuple(
        side
        for name, path in helper_transcripts(location)
        if (side := _read_side(location, name, path, "messages", max_bytes, raw)) is not None
    )
    compaction = _read_side(location, "compaction", location.compaction, "compaction", max_bytes, raw)
    lead = SessionFiles(location, messages, manifest, tuple(source_files), tuple(raw), known=cut)
    return _with_sides(lead, helpers, compaction)


def _with_sides(files: SessionFiles, helpers: tuple[SideFile, ...], compaction: SideFile | None) -> SessionFiles:
    read = [side.fingerprint for side in (*helpers, compaction) if side is not None and side.fingerprint is not None]
    source_files = (*files.source_files, *read)
    return SessionFiles(
        files.location, files.messages, files.manifest, source_files, files.raw, helpers, compaction, files.known
    )


def _read_side(
    location: SessionLocation, name: str, path: Path, kind: str, max_bytes: int, raw: list[RawFile]
) -> SideFile | None:
    """A side file as read, or its failure; None when there is no such file (any more)."""
    try:
        fingerprint = stat_fingerprint(path)
        if fingerprint is None:
            return None
        _refuse_outside(location, path)
        document = _read(location, path, fingerprint, kind, max_bytes, raw)
    except NotFound:
        return None  # removed between listing and reading: as if it never existed
    except SourceError as exc:
        return SideFile(name, path, None, exc)
    return SideFile(name, path, document, fingerprint=fingerprint)


def parse_session(location: SessionLocation, raw: Sequence[RawFile]) -> SessionFiles:
    """The session as ``read_session`` would have read it from these bytes (kept copies of its files).

    Raises ``SourceError`` as ``read_session`` does; a kept helper's transcript or sidecar
    that does not parse is that file's failure alone, as when it is read.
    """
    by_path = {Path(file.fingerprint.path): file for file in raw}
    messages_raw = by_path.get(location.messages)
    if messages_raw is None:
        raise SourceError(str(location.messages), "no messages file")
    messages = parse_json(messages_raw.data, str(location.messages), "messages")
    kept = [messages_raw]
    manifest: dict[str, Any] | None = None
    manifest_raw = by_path.get(location.manifest)
    if manifest_raw is not None:
        parsed = parse_json(manifest_raw.data, str(location.manifest), "manifest")
        if not isinstance(parsed, dict):
            raise SourceError(str(location.manifest), "wrong shape: top level: expected an object")
        manifest = parsed
        kept.append(manifest_raw)
    lead = tuple(file.fingerprint for file in kept)
    sides: list[SideFile] = []
    for path, file in sorted(by_path.items()):
        if path.parent != location.folder or path in (location.messages, location.manifest):
            continue
        name = path.name.removesuffix(MESSAGES_SUFFIX)
        if path != location.compaction and name == path.name:
            continue  # not a transcript (the approval settings file)
        kind, side_name = ("compaction", "compaction") if path == location.compaction else ("messages", name)
        try:
            document = parse_json(file.data, str(path), kind)
        except SourceError as exc:
            sides.append(SideFile(side_name, path, None, exc))
            continue
        kept.append(file)
        sides.append(SideFile(side_name, path, document, fingerprint=file.fingerprint))
    helpers = tuple(side for side in sides if side.path != location.compaction)
    compaction = next((side for side in sides if side.path == location.compaction), None)
    return _with_sides(SessionFiles(location, messages, manifest, lead, tuple(kept)), helpers, compaction)


def _read_messages(
    location: SessionLocation, fingerprint: SourceFile, max_bytes: int, raw: list[RawFile], last: ByteLayout | None
) -> tuple[Any, KnownMessages | None]:
    """The messages file, parsed without ``last``'s messages when its bytes show them unchanged."""
    path = location.messages
    data = read_bytes(path, max_bytes=max_bytes)
    cut = parse_without_known(data, last, str(path)) if last is not None else None
    document, known = cut if cut is not None else (parse_json(data, str(path), "messages"), None)
    raw.append(RawFile(path.relative_to(location.data_dir).as_posix(), data, fingerprint))
    return document, known


def _read(
    location: SessionLocation, path: Path, fingerprint: SourceFile, kind: str, max_bytes: int, raw: list[RawFile]
) -> Any:
    """Parse one file, adding its bytes to ``raw`` (named from the data folder, as the vault keeps them)."""
    data = read_bytes(path, max_bytes=max_bytes)
    parsed = parse_json(data, str(path), kind)
    raw.append(RawFile(path.relative_to(location.data_dir).as_posix(), data, fingerprint))
    return parsed


def _refuse_outside(location: SessionLocation, path: Path) -> None:
    if leads_outside(path, location.sessions_root):
        raise SourceError(str(path), OUTSIDE_ROOT)


def session_fingerprint(location: SessionLocation) -> tuple[SourceFile, ...]:
    """Fingerprints of the files ``read_session`` would read (stat only, no read): the
    messages file first, then the manifest, the helpers' transcripts and the sidecar."""
    names = folder_files(location.folder)
    found = [stat_fingerprint(location.messages), stat_fingerprint(location.manifest)]
    found.extend(_quiet_stat(path) for _, path in helper_transcripts(location, names))
    compaction = location.compaction
    # The listing says whether there is a sidecar (most sessions have none): a poll of the
    # active sessions fingerprints each of them, and a stat that fails costs an exception.
    if names is None or compaction.name in names:
        found.append(_quiet_stat(compaction))
    return tuple(fingerprint for fingerprint in found if fingerprint is not None)


def _quiet_stat(path: Path) -> SourceFile | None:
    # A side file that cannot be stat'ed is that file's failure, reported when it is read.
    try:
        return stat_fingerprint(path)
    except SourceError:
        return None
