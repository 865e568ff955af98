"""Codex as the registry sees it (``postrun.agents.registry.Adapter``): one sessions folder,
``YYYY/MM/DD/rollout-<time>-<thread id>.jsonl[.zst]`` per thread, ``archived_sessions/``
beside it. A session is a root thread's rollout with its children's. Codex writes no
approval events and has no approval settings to snapshot: decisions are read from the calls."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from postrun.agents.codex.checks import listed_check, root_problem
from postrun.agents.codex.index import ThreadIndex
from postrun.agents.codex.layout import SessionLocation
from postrun.agents.codex.locate import ARCHIVE, archive_folder, list_rollouts, sessions_folder, waiting_reason
from postrun.agents.codex.mapping import MappingCache, map_session
from postrun.agents.codex.reading import kept_files, read_session
from postrun.agents.codex.session import AGENT
from postrun.agents.codex.targets import resolve_targets
from postrun.agents.registry import (
    Adapter,
    Admit,
    AgentCheck,
    AgentRoot,
    Approvals,
    Helpers,
    KeptSession,
    Listing,
    Location,
    Skipped,
)
from postrun.errors import NotFound, SourceError
from postrun.jsonio import stat_fingerprint
from postrun.paths import home_dir
from postrun.records import MappedSession, RawFile, SourceFile

if TYPE_CHECKING:
    from postrun.settings import LoadedSettings

# The first line of a rollout (its session_meta, ~22 KB) is read whole; a larger one is refused.
HEAD_BYTES = 64 * 2**20
_UNWRITTEN = "its first line is not written yet"


def _codex(location: Location) -> SessionLocation:
    if not isinstance(location, SessionLocation):
        raise TypeError(f"not a Codex session: {location!r}")
    return location


def _names(folder: Path) -> frozenset[str]:
    """The entry names under a sessions (or archive) folder, down to its day folders."""
    found: set[str] = set()
    stack = [(folder, "", 0)]
    while stack:
        current, prefix, depth = stack.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                name = f"{prefix}{entry.name}"
                found.add(name)
                if depth < 3 and entry.is_dir(follow_symlinks=False) and not entry.name.startswith((".", "_")):
                    stack.append((Path(entry.path), f"{name}/", depth + 1))
    return frozenset(found)


def _newest(folder: Path, levels: int) -> list[tuple[str, int]]:
    """(path, digest of its entry names) of the newest folder at each level below ``folder``
    (YYYY, MM, DD) and of the one before it: where Codex writes new rollouts. Names, not
    mtimes: a file created in the same clock tick as its folder leaves the mtime as it was."""
    stamps: list[tuple[str, int]] = []
    for _ in range(levels):
        try:
            with os.scandir(folder) as entries:
                folders = sorted((e for e in entries if e.is_dir(follow_symlinks=False)), key=lambda e: e.name)
        except OSError:
            break
        for entry in folders[-2:]:
            try:
                stamps.append((entry.path, hash(frozenset(os.listdir(entry.path)))))  # noqa: PTH208 - names only
            except OSError:
                continue
        if not folders:
            break
        folder = Path(folders[-1].path)
    return stamps


class CodexSource:
    """The sessions of one sessions folder and the archive beside it."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._archive = archive_folder(root)
        self._index = ThreadIndex(HEAD_BYTES)
        self._listed: tuple[Listing, int] | None = None
        self._waiting: tuple[Path, ...] = ()  # rollouts whose first line was not written at the last listing
        self._unreadable: tuple[Path, ...] = ()  # rollouts that could not be opened at the last listing

    @property
    def adapter(self) -> Adapter:
        return ADAPTER

    @property
    def root(self) -> Path:
        return self._root

    def list(self) -> Listing:
        if not self._root.is_dir():
            raise NotFound(str(self._root), "no such folder")
        names = self._names_or_empty()
        rollouts = list_rollouts(self._root)
        found = self._index.sessions(rollouts)
        skipped = [*rollouts.skipped, *found.unreadable]
        skipped.extend(Skipped(rollout.path, _UNWRITTEN, False) for rollout in found.unwritten)
        sessions: list[SessionLocation] = []
        for session in found.sessions:
            if session.root is None:
                skipped.extend(Skipped(child.path, waiting_reason(session), False) for child in session.children)
            else:
                sessions.append(session)
        listing = Listing(tuple(sessions), tuple(skipped))
        self._listed = (listing, hash(names))
        self._waiting = tuple(rollout.path for rollout in found.unwritten)
        self._unreadable = tuple(entry.path for entry in found.unreadable)
        return listing

    def _names_or_empty(self) -> frozenset[str]:
        try:
            return self.names()
        except OSError:
            return frozenset()

    def names(self) -> frozenset[str]:
        archived = _names(self._archive) if self._archive.is_dir() else frozenset()
        return _names(self._root) | frozenset(f"{ARCHIVE}/{name}" for name in archived)

    def location(self, session_id: str) -> SessionLocation:
        known = self._index.location(session_id)
        if known is not None and known.root is not None:
            return known
        return SessionLocation(session_id, None)  # gone (or never seen): no rollout of its own

    def names_key(self) -> int:
        return hash(self.names())

    def listing_key(self, listing: Listing) -> int:
        if self._listed is not None and self._listed[0] is listing:
            return self._listed[1]
        return hash(frozenset(str(_codex(location).where) for location in listing.sessions))

    def listing_stamp(self) -> Hashable:
        # A new rollout changes its day folder's mtime, not the root's: the newest day folders
        # (and the archive) are where Codex writes them. A rollout created empty becomes a
        # session (or a sub-agent of one) when its first line comes: its size is watched too.
        stamps: list[Hashable] = list(_newest(self._root, 3))
        with contextlib.suppress(OSError):
            stamps.append(hash(frozenset(os.listdir(self._archive))))  # noqa: PTH208 - names only
        for path in self._waiting:
            try:
                stamps.append((str(path), path.stat().st_size))
            except OSError:
                continue
        # A rollout made readable again (chmod) keeps its name, size and mtime: its ctime moves.
        for path in self._unreadable:
            try:
                stamps.append((str(path), path.stat().st_ctime_ns))
            except OSError:
                continue
        return tuple(stamps)

    def ripe(self, entry: Skipped) -> bool:
        return entry.reason == _UNWRITTEN and self._index.session_of(entry.path) is not None

    def session_for_event(self, path: str) -> str | None:
        return self._index.session_of(path, self._root if Path(path).is_relative_to(self._root) else self._archive)

    def watch_folders(self, session_id: str) -> tuple[Path, ...]:
        # Its rollouts' folders, and today's: a sub-agent it starts writes there.
        newest = [Path(path) for path, _ in _newest(self._root, 3)[-1:]]
        return tuple(dict.fromkeys(folder for folder in (*self._index.folders(session_id), *newest) if folder.is_dir()))


class CodexAdapter:
    kind = AGENT
    label = "Codex"
    check_names = (f"{AGENT} sessions",)
    # A rollout's end is its last turn's: the thread takes its next prompt any time, and a
    # copy of the whole rollout after each line would make a line cost O(file).
    end_is_final = False
    # No fork of a thread is known to copy its lines into another under the same ids.
    forks_copy_lines = False

    def roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[AgentRoot, ...]:
        configured = loaded.settings.codex_dir
        if configured is not None:
            return (AgentRoot(configured, loaded.sources.get("codex_dir", "default")),)
        variable = "CODEX_HOME" if environ.get("CODEX_HOME") else None
        path = sessions_folder(
            {key: value for key, value in environ.items() if key != "POSTRUN_CODEX_DIR"}, home_dir(environ)
        )
        return (AgentRoot(path, f"default, from {variable}" if variable else "default"),)

    def lookup_roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        return tuple(root.path for root in self.roots(loaded, environ))

    def data_folders(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        roots = [root.path for root in self.roots(loaded, environ)]
        default = sessions_folder({}, home_dir(environ))
        return tuple(dict.fromkeys((*roots, *(root.parent for root in roots), default, default.parent)))

    def source(self, root: AgentRoot) -> CodexSource:
        return CodexSource(root.path)

    def resolve_targets(self, targets: Iterable[str], lookup_roots: Sequence[Path]) -> Listing:
        return resolve_targets(targets, lookup_roots[0], max_bytes=HEAD_BYTES)

    def fingerprint(self, location: Location) -> tuple[SourceFile, ...]:
        found: list[SourceFile] = []
        for rollout in _codex(location).rollouts:
            fingerprint = stat_fingerprint(rollout.path)
            if fingerprint is not None:
                found.append(fingerprint)
        return tuple(found)

    def read(self, location: Location, *, max_bytes: int, cache: Any | None, admit: Admit) -> Any:
        known = cache if isinstance(cache, MappingCache) else None
        return read_session(_codex(location), max_bytes=max_bytes, cache=known, admit=admit)

    def approvals(self, files: Any, *, max_bytes: int) -> tuple[Approvals, RawFile | None]:
        return {}, None  # Codex keeps no approval settings: decisions are read from each call

    def map(self, files: Any, approvals: Approvals, cache: Any | None, helpers: Helpers) -> tuple[MappedSession, Any]:
        return map_session(files, cache if isinstance(cache, MappingCache) else None, helpers)

    def kept(self, session_id: str, copies: Sequence[RawFile]) -> KeptSession | None:
        files = kept_files(session_id, copies, max_bytes=2**62)
        return KeptSession(files, {}) if files is not None else None

    def checks(self, roots: Sequence[AgentRoot]) -> tuple[AgentCheck, ...]:
        found: list[AgentCheck] = []
        for root in roots:
            try:
                check = root_problem(root.path) or listed_check(root.path, CodexSource(root.path).list())
            except (NotFound, SourceError) as exc:  # removed or replaced between the two looks
                check = AgentCheck(f"{AGENT} sessions", "warn", str(exc))
            found.append(check)
        return tuple(found)


ADAPTER: Adapter = CodexAdapter()
