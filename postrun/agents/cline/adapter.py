"""Cline as the registry sees it (``postrun.agents.registry.Adapter``): one sessions root,
``<root>/<id>/<id>.messages.json`` per session, approval settings in the root's parent."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from postrun.agents.cline.approvals import approval_source, snapshot_from_settings
from postrun.agents.cline.checks import check_approvals, check_sessions
from postrun.agents.cline.files import SessionFiles, parse_session, read_session, session_fingerprint
from postrun.agents.cline.locate import (
    MESSAGES_SUFFIX,
    SessionLocation,
    list_sessions,
    resolve_targets,
    session_id_for_event,
)
from postrun.agents.cline.mapping import AGENT, MappingCache, map_session, workspace_root
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
from postrun.paths import cline_home_sessions
from postrun.records import MappedSession, RawFile, SourceFile

if TYPE_CHECKING:
    from postrun.settings import LoadedSettings


def _cline(location: Location) -> SessionLocation:
    if not isinstance(location, SessionLocation):
        raise TypeError(f"not a Cline session: {location!r}")
    return location


def _names_key(names: Iterable[str]) -> int:
    return hash(frozenset(names))


class ClineSource:
    """The sessions of one Cline sessions root: each a folder directly in it."""

    def __init__(self, root: Path) -> None:
        self._root = root

    @property
    def adapter(self) -> Adapter:
        return ADAPTER

    @property
    def root(self) -> Path:
        return self._root

    def list(self) -> Listing:
        return list_sessions(self._root)

    def location(self, session_id: str) -> SessionLocation:
        return SessionLocation.in_root(self._root, session_id)

    def names_key(self) -> int:
        return _names_key(os.listdir(self._root))  # noqa: PTH208 - names only, no Path objects

    def listing_key(self, listing: Listing) -> int:
        ids = [location.session_id for location in listing.sessions]
        return _names_key([*ids, *(entry.path.name for entry in listing.skipped)])

    def listing_stamp(self) -> Hashable:
        return None  # a new session folder changes the root's own mtime

    def ripe(self, entry: Skipped) -> bool:
        return SessionLocation.in_root(self._root, entry.path.name).messages.exists()

    def session_for_event(self, path: str) -> str | None:
        return session_id_for_event(self._root, path)

    def watch_folders(self, session_id: str) -> tuple[Path, ...]:
        return (self._root / session_id,)


class ClineAdapter:
    kind = AGENT
    label = "Cline"
    check_names = ("sessions", "approvals")
    end_is_final = True
    # Step ids are the session's own (``call_1_0_1#0``): sessions share them by chance.
    forks_copy_lines = False

    def roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[AgentRoot, ...]:
        return (AgentRoot(loaded.settings.cline_dir, loaded.sources["cline_dir"]),)

    def lookup_roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        # Cline's own default, whatever POSTRUN_CLINE_DIR says: a bare id names a session of
        # the Cline that runs here.
        return (cline_home_sessions(environ),)

    def data_folders(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        watched = loaded.settings.cline_dir
        return (watched, watched.parent, cline_home_sessions(environ).parent)

    def source(self, root: AgentRoot) -> ClineSource:
        return ClineSource(root.path)

    def resolve_targets(self, targets: Iterable[str], lookup_roots: Sequence[Path]) -> Listing:
        return resolve_targets(targets, lookup_roots[0])

    def fingerprint(self, location: Location) -> tuple[SourceFile, ...]:
        return session_fingerprint(_cline(location))

    def read(self, location: Location, *, max_bytes: int, cache: Any | None, admit: Admit) -> SessionFiles:
        known = cache.transcript.layout if isinstance(cache, MappingCache) and cache.transcript is not None else None
        return read_session(
            _cline(location),
            max_bytes=max_bytes,
            known=known,
            admit=lambda manifest: admit(workspace_root(manifest)),
        )

    def approvals(self, files: Any, *, max_bytes: int) -> tuple[Approvals, RawFile | None]:
        assert isinstance(files, SessionFiles)
        return approval_source(files.location.data_dir, files.client_source, max_bytes=max_bytes)

    def map(self, files: Any, approvals: Approvals, cache: Any | None, helpers: Helpers) -> tuple[MappedSession, Any]:
        assert isinstance(files, SessionFiles)
        return map_session(files, approvals, cache if isinstance(cache, MappingCache) else None, helpers)

    def kept(self, session_id: str, copies: Sequence[RawFile]) -> KeptSession | None:
        suffix = f"/{session_id}{MESSAGES_SUFFIX}"
        messages = next((Path(f.fingerprint.path) for f in copies if f.name.endswith(suffix)), None)
        if messages is None:
            return None
        folder = messages.parent
        location = SessionLocation(session_id, folder, messages, folder / f"{session_id}.json", folder.parent)
        files = parse_session(location, copies)
        settings = next((file for file in copies if file.settings), None)
        approvals = snapshot_from_settings(
            files.client_source, None if settings is None else settings.data, settings.name if settings else ""
        )
        return KeptSession(files, approvals)

    def checks(self, roots: Sequence[AgentRoot]) -> tuple[AgentCheck, ...]:
        found: list[AgentCheck] = []
        for root in roots:
            found.append(check_sessions(root.path)[0])
            found.append(check_approvals(root.path))
        return tuple(found)


ADAPTER: Adapter = ClineAdapter()
