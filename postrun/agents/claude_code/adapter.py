"""Claude Code as the registry sees it (``postrun.agents.registry.Adapter``): one projects
folder, ``<root>/<slug>/<id>.jsonl`` per session, sub-agents and tool outputs in ``<id>/``.
Claude Code has no approval settings of its own to snapshot: each call's decision is on its
result line (``permissionDecision``)."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from postrun.agents.claude_code.files import SessionFiles, files_from_copies, read_session, session_fingerprint
from postrun.agents.claude_code.locate import (
    AGENT,
    SUFFIX,
    SessionLocation,
    find_session,
    is_safe_name,
    list_sessions,
    location_for_event,
    projects_root,
    resolve_targets,
)
from postrun.agents.claude_code.mapping import MappingCache, map_session, read_from
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
    root_hint,
)
from postrun.errors import NotFound, PostrunError
from postrun.paths import working_dir
from postrun.records import MappedSession, RawFile, SourceFile
from postrun.text import plural

_ABSENT_HINT = (
    "has Claude Code run on this machine? Otherwise set claude_dir in the config file"
    " (or POSTRUN_CLAUDE_DIR, or CLAUDE_CONFIG_DIR)"
)

if TYPE_CHECKING:
    from postrun.settings import LoadedSettings


def _claude(location: Location) -> SessionLocation:
    if not isinstance(location, SessionLocation):
        raise TypeError(f"not a Claude Code session: {location!r}")
    return location


def _entry_names(root: Path) -> frozenset[str]:
    """The names a listing is made of: the project folders and the transcripts in each."""
    names: set[str] = set()
    for slug in os.listdir(root):  # noqa: PTH208 - names only, no Path object per entry
        names.add(slug)
        try:
            inside = os.listdir(root / slug)  # noqa: PTH208
        except OSError:
            continue
        names.update(f"{slug}/{name}" for name in inside if name.endswith(SUFFIX))
    return frozenset(names)


class ClaudeSource:
    """The sessions of one projects folder: ``<slug>/<id>.jsonl`` in each project folder."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._slugs: dict[str, str] = {}  # session id -> its project folder, from the last listing
        self._listed: tuple[Listing, int] | None = None  # the last listing and the names it was made of

    @property
    def adapter(self) -> Adapter:
        return ADAPTER

    @property
    def root(self) -> Path:
        return self._root

    def list(self) -> Listing:
        try:
            names = _entry_names(self._root)
        except OSError:
            names = frozenset()  # the listing says why
        listing = list_sessions(self._root)
        self._slugs = {location.session_id: _claude(location).slug for location in listing.sessions}
        self._listed = (listing, hash(names))
        return listing

    def location(self, session_id: str) -> SessionLocation:
        slug = self._slugs.get(session_id)
        if slug is not None:
            return SessionLocation(self._root, slug, session_id)
        try:
            found = find_session(self._root, session_id, session_id)
        except (NotFound, PostrunError):
            return SessionLocation(self._root, "", session_id)  # gone: its transcript is not found
        self._slugs[session_id] = found.slug
        return found

    def names_key(self) -> int:
        return hash(_entry_names(self._root))

    def listing_key(self, listing: Listing) -> int:
        if self._listed is not None and self._listed[0] is listing:
            return self._listed[1]
        return hash(frozenset(str(_claude(location).where.relative_to(self._root)) for location in listing.sessions))

    def listing_stamp(self) -> Hashable:
        # A new transcript changes its project folder's mtime, not the root's.
        stamps = []
        try:
            with os.scandir(self._root) as scan:
                for entry in scan:
                    try:
                        found = entry.stat()
                    except OSError:
                        continue
                    stamps.append((entry.name, found.st_ino, found.st_mtime_ns))
        except OSError:
            return None
        return frozenset(stamps)

    def ripe(self, entry: Skipped) -> bool:
        return False  # a transcript is a session from its first line

    def session_for_event(self, path: str) -> str | None:
        location = location_for_event(self._root, path)
        if location is None:
            return None
        self._slugs.setdefault(location.session_id, location.slug)
        return location.session_id

    def watch_folders(self, session_id: str) -> tuple[Path, ...]:
        location = self.location(session_id)
        if not location.slug:
            return ()
        return tuple(folder for folder in (location.source, location.folder, location.subagents) if folder.is_dir())


class ClaudeCodeAdapter:
    kind = AGENT
    label = "Claude Code"
    check_names = (f"{AGENT} sessions",)
    end_is_final = True
    forks_copy_lines = True

    def roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[AgentRoot, ...]:
        configured = loaded.settings.claude_dir
        if configured is not None:
            return (AgentRoot(configured, loaded.sources.get("claude_dir", "default")),)
        path, variable = projects_root(environ, base=working_dir())
        return (AgentRoot(path, f"default, from {variable}" if variable else "default"),)

    def lookup_roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        return tuple(root.path for root in self.roots(loaded, environ))

    def data_folders(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        roots = [root.path for root in self.roots(loaded, environ)]
        default, _ = projects_root(environ, base=working_dir())
        return (*roots, *(root.parent for root in roots), default, default.parent)

    def source(self, root: AgentRoot) -> ClaudeSource:
        return ClaudeSource(root.path)

    def resolve_targets(self, targets: Iterable[str], lookup_roots: Sequence[Path]) -> Listing:
        return resolve_targets(targets, lookup_roots[0])

    def fingerprint(self, location: Location) -> tuple[SourceFile, ...]:
        return session_fingerprint(_claude(location))

    def read(self, location: Location, *, max_bytes: int, cache: Any | None, admit: Admit) -> SessionFiles:
        since = read_from(cache if isinstance(cache, MappingCache) else None)
        return read_session(_claude(location), max_bytes=max_bytes, since=since, admit=admit)

    def approvals(self, files: Any, *, max_bytes: int) -> tuple[Approvals, RawFile | None]:
        return {}, None  # each decision is on the call's own result line

    def map(self, files: Any, approvals: Approvals, cache: Any | None, helpers: Helpers) -> tuple[MappedSession, Any]:
        assert isinstance(files, SessionFiles)
        return map_session(files, cache if isinstance(cache, MappingCache) else None, helpers)

    def kept(self, session_id: str, copies: Sequence[RawFile]) -> KeptSession | None:
        name = f"{session_id}{SUFFIX}"
        lead = next((copy for copy in copies if Path(copy.fingerprint.path).name == name), None)
        if lead is None:
            return None
        transcript = Path(lead.fingerprint.path)
        slug = transcript.parent
        if not (is_safe_name(session_id) and is_safe_name(slug.name)):
            return None
        location = SessionLocation(slug.parent, slug.name, session_id)
        return KeptSession(files_from_copies(location, copies), {})

    def checks(self, roots: Sequence[AgentRoot]) -> tuple[AgentCheck, ...]:
        found: list[AgentCheck] = []
        for root in roots:
            try:
                listing = list_sessions(root.path)
            except PostrunError as exc:
                found.append(AgentCheck(f"{AGENT} sessions", "warn", str(exc), root_hint(exc, _ABSENT_HINT)))
                continue
            count = len(listing.sessions)
            detail = f"{plural(count, 'session', grouped=False)} in {root.path}"
            found.append(AgentCheck(f"{AGENT} sessions", "ok", detail, sessions=count))
        return tuple(found)


ADAPTER: Adapter = ClaudeCodeAdapter()
