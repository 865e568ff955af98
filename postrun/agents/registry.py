"""The agents Postrun reads, each an adapter registered by its kind.

An adapter lives in ``postrun/agents/<kind>/`` (the module named in ``_MODULES``, imported
the first time it is asked for) and exposes ``ADAPTER``, an object of the ``Adapter``
protocol below. The ingest pipeline, capture and the read paths ask this module for the
adapter of a kind, of a session's ``Location``, or for the roots to watch; none of them
imports an adapter by name.

Two kinds of objects come from an adapter, and the pipeline treats both as opaque but for
what the protocols name: a ``Location`` (where one session's files are: picklable, compared
by value) and what ``Adapter.read`` returns (the session's files as read: ``ReadFiles``,
with the adapter's own fields besides). A mapping cache is the adapter's own object too
(the pipeline only keeps it in memory and hands it back).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from postrun.errors import PostrunError, SourceError, UsageError
from postrun.records import MappedSession, RawFile, SourceFile, StoredActor

if TYPE_CHECKING:
    from postrun.settings import LoadedSettings

# Every kind, in the order capture, ``status`` and ``doctor`` name them; the first is the one a
# bare path or ``postrun ingest`` without ``--agent`` means.
KINDS: tuple[str, ...] = ("cline", "claude-code", "codex")
_MODULES: dict[str, str] = {
    "cline": "postrun.agents.cline.adapter",
    "claude-code": "postrun.agents.claude_code.adapter",
    "codex": "postrun.agents.codex.adapter",
}

Approvals = dict[str, Any]  # a JSON-ready approval snapshot; {} for an agent that has none
Helpers = Mapping[str, StoredActor]  # what the store holds of a session's helper actors, by actor id
Admit = Callable[[str], None]  # given a session's workspace root ("" unknown); raises Excluded to refuse it
Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """An entry under a root that is not a session. ``warn`` is False for the agent's own
    bookkeeping. ``path`` may hold an unsafe name: log it with ``repr``/``ascii``."""

    path: Path
    reason: str
    warn: bool


@dataclass(frozen=True, slots=True)
class Listing:
    """The sessions under a root (or named by targets), and what was skipped."""

    sessions: tuple[Location, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    failures: tuple[PostrunError, ...] = ()  # targets that name no session (``resolve_targets``)
    notes: tuple[str, ...] = ()  # how a target was taken, when not as given (a helper's file)


def listing_of_targets(targets: Iterable[str | os.PathLike[str]], resolve: Callable[[str], Listing]) -> Listing:
    """What ``resolve`` makes of each target, in order and without a session twice (by its lead
    file); a target it refuses (``PostrunError``), or the system will not let it look at (a name
    longer than the system allows, a folder it may not enter), is a failure of its own: the
    others still count."""
    sessions: dict[Path, Location] = {}
    skipped: list[Skipped] = []
    failures: list[PostrunError] = []
    notes: list[str] = []
    for target in targets:
        try:
            listing = resolve(os.fspath(target))
        except PostrunError as exc:
            failures.append(exc)
            continue
        except OSError as exc:
            failures.append(SourceError(os.fspath(target), f"cannot be looked at: {exc.strerror or exc}"))
            continue
        for location in listing.sessions:
            sessions.setdefault(location.where, location)
        skipped.extend(listing.skipped)
        notes.extend(listing.notes)
    return Listing(tuple(sessions.values()), tuple(skipped), tuple(failures), tuple(notes))


@dataclass(frozen=True, slots=True)
class AgentRoot:
    """A folder an agent writes its sessions into, and where that path came from."""

    path: Path
    source: str  # as ``config show`` names sources: "default", "env POSTRUN_X", "file <path>", "flag"
    role: str = "sessions"  # what it holds, for people ("sessions", "archived sessions")


@dataclass(frozen=True, slots=True)
class AgentCheck:
    """One of ``postrun doctor``'s checks, as an adapter reports it."""

    name: str
    level: Level
    detail: str
    hint: str = ""
    sessions: int | None = None  # a root's check: the sessions it holds (the inotify check counts them)


# The hint of a check whose folder is there but cannot be listed (not a question of where the agent runs).
UNLISTED_HINT = "capture runs as you and must be able to list it: check its permissions (`ls -ld` it)"


def unlisted(reason: str) -> bool:
    """A folder that is there but cannot be listed (permissions), as the adapters' listings word it."""
    return reason.startswith("cannot list")


def root_hint(error: PostrunError, absent_hint: str) -> str:
    """The hint of a root's check whose listing failed: its permissions when the folder is there
    but cannot be listed, else ``absent_hint`` (where the agent runs)."""
    return UNLISTED_HINT if isinstance(error, SourceError) and unlisted(error.reason) else absent_hint


@dataclass(frozen=True, slots=True)
class KeptSession:
    """A session parsed back from the vault's copies (``Adapter.kept``)."""

    files: Any  # as ``Adapter.read`` returns them
    approvals: Approvals  # the snapshot its kept settings give (used when the store keeps none)


class Location(Protocol):
    """Where one session's files are. Picklable (ingest processes receive it), a value."""

    @property
    def agent(self) -> str: ...  # the adapter's kind

    @property
    def session_id(self) -> str: ...

    @property
    def where(self) -> Path: ...  # the file that makes or breaks the session (errors name it)


class ReadFiles(Protocol):
    """A session's files as ``Adapter.read`` (or ``Adapter.kept``) gives them."""

    @property
    def location(self) -> Location: ...

    @property
    def raw(self) -> tuple[RawFile, ...]: ...  # the bytes parsed, for the vault

    @property
    def source_files(self) -> tuple[SourceFile, ...]: ...  # the fingerprints of the files parsed, lead first


class Source(Protocol):
    """One agent's sessions under one root, as capture watches them (``Adapter.source``).

    Capture runs one source per (agent, root), each with its own watcher, poller and session
    book. A source may keep state between calls (an index of which file belongs to which
    session); it is called from capture's poll and watcher threads, never two calls at once
    from the same thread kind.
    """

    @property
    def adapter(self) -> Adapter: ...

    @property
    def root(self) -> Path: ...

    def list(self) -> Listing:
        """Every session under the root, in a stable order. Raises NotFound when the root does
        not exist, SourceError when it cannot be listed."""
        ...

    def location(self, session_id: str) -> Location:
        """Where a session of this root is (one the last listing found, or a new id)."""
        ...

    def names_key(self) -> int:
        """A digest of the entry names a listing is made of, cheap (names, no stat per session):
        the poller lists again only when it changed."""
        ...

    def listing_key(self, listing: Listing) -> int:
        """``names_key`` as it was when ``listing`` was made, from the listing itself."""
        ...

    def listing_stamp(self) -> Hashable:
        """Besides the root's own stat: what else changes when a session appears (subfolders'
        stats, for an agent whose sessions are not directly in the root). The poller stats the
        root every tick and calls this too; a constant when the root's stat says it all."""
        ...

    def ripe(self, entry: Skipped) -> bool:
        """A folder skipped at the last listing (a session being created) is a session now."""
        ...

    def session_for_event(self, path: str) -> str | None:
        """The session a file-system event's path under the root is about; None when none."""
        ...

    def watch_folders(self, session_id: str) -> tuple[Path, ...]:
        """The folders whose events announce the session's changes (watched while it is active)."""
        ...


class Adapter(Protocol):
    """What Postrun needs of one agent."""

    @property
    def kind(self) -> str: ...  # "cline": the records' agent.kind, the log lines' prefix

    @property
    def label(self) -> str: ...  # for people: "Cline"

    # True when a session whose records have an end is not written again (Cline's manifest
    # says so): its live ingest copies it to the vault at once. False when an end is only
    # "no turn running" (a Codex thread takes its next prompt any time): paced as an open one.
    @property
    def end_is_final(self) -> bool: ...

    # True when a session forked from another begins with copies of its lines, its message steps
    # under the same ids, each its line's own uuid (Claude Code's ``--fork-session``): a message
    # step id two of its sessions share is such a copy, which ``forget`` names.
    @property
    def forks_copy_lines(self) -> bool: ...

    # -- where its sessions are ------------------------------------------------------------

    def roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[AgentRoot, ...]:
        """The folders capture watches (one source each), from the settings and the environment."""
        ...

    def lookup_roots(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        """Where ``postrun ingest`` looks up a bare session id."""
        ...

    def data_folders(self, loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[Path, ...]:
        """The agent's own folders: Postrun never writes into them (``postrun raw --to``)."""
        ...

    def source(self, root: AgentRoot) -> Source: ...

    def resolve_targets(self, targets: Iterable[str], lookup_roots: Sequence[Path]) -> Listing:
        """The sessions ``postrun ingest`` targets name, in order, without duplicates: ids (looked
        up in ``lookup_roots``), session files and folders, roots. A helper's file given alone
        is its parent session, with a note. A target that names none is a failure of its own."""
        ...

    # -- one session -------------------------------------------------------------------------

    def fingerprint(self, location: Location) -> tuple[SourceFile, ...]:
        """The fingerprints of the files ``read`` would read, stat only, the lead file first; no
        lead (``where``) first means the session is gone."""
        ...

    def read(self, location: Location, *, max_bytes: int, cache: Any | None, admit: Admit) -> ReadFiles:
        """Read and parse the session's files (fingerprinted before they are read). ``cache`` is
        the mapping cache the last ``map`` returned (reading may resume from it); ``admit`` is
        called with the workspace root before any large file is read. Raises SourceError,
        NotParseableYet for a file caught half-written, and what ``admit`` raises."""
        ...

    def approvals(self, files: Any, *, max_bytes: int) -> tuple[Approvals, RawFile | None]:
        """The approval snapshot for a session stored for the first time, and the settings file
        it came from (kept in the vault). An agent without one returns ``({}, None)``."""
        ...

    def map(self, files: Any, approvals: Approvals, cache: Any | None, helpers: Helpers) -> tuple[MappedSession, Any]:
        """Map the files to v1.2 records (pure); returns them and the cache the next map of the
        same session may reuse. ``helpers``: the store's helper actors, for a helper file that
        cannot be read now (its stored steps stay). Raises SourceError / SchemaError."""
        ...

    def kept(self, session_id: str, copies: Sequence[RawFile]) -> KeptSession | None:
        """The session parsed back from the vault's newest copies of its files (``reingest``);
        None when they are not this agent's. Raises NotFound when they lack the lead file."""
        ...

    def checks(self, roots: Sequence[AgentRoot]) -> tuple[AgentCheck, ...]:
        """``postrun doctor``'s checks of the agent's folders and settings."""
        ...

    @property
    def check_names(self) -> tuple[str, ...]: ...  # the names ``checks`` gives, in order


_LOADED: dict[str, Adapter] = {}


def adapter(kind: str) -> Adapter:
    """The adapter of ``kind``; UsageError naming the known kinds for any other."""
    found = _LOADED.get(kind)
    if found is not None:
        return found
    module = _MODULES.get(kind)
    if module is None:
        raise unknown_kind(kind)
    loaded: Adapter = importlib.import_module(module).ADAPTER
    _LOADED[kind] = loaded
    return loaded


def unknown_kind(kind: str, where: str = "") -> UsageError:
    return UsageError(where, f"unknown agent {kind!r} (known: {', '.join(KINDS)})")


def check_kind(kind: str | None, where: str = "") -> None:
    """Nothing for a registered kind (or None: any); UsageError naming the known kinds (and
    ``where`` the kind was given) otherwise."""
    if kind is not None and kind not in _MODULES:
        raise unknown_kind(kind, where)


def adapters(kinds: Iterable[str] = KINDS) -> tuple[Adapter, ...]:
    return tuple(adapter(kind) for kind in kinds)


def adapter_of(location: Location) -> Adapter:
    return adapter(location.agent)


def default_kind() -> str:
    return KINDS[0]


def as_source(root: Path | Source) -> Source:
    """A source as given, or a bare path as a root of the first registered agent."""
    if isinstance(root, Path):
        return adapter(default_kind()).source(AgentRoot(root, "given"))
    return root


def enabled_roots(loaded: LoadedSettings, environ: Mapping[str, str]) -> list[tuple[Adapter, AgentRoot]]:
    """Every root of every agent the ``agents`` setting names, in that order."""
    return [(agent, root) for agent in adapters(loaded.settings.agents) for root in agent.roots(loaded, environ)]


def folder_lines(loaded: LoadedSettings, environ: Mapping[str, str]) -> list[str]:
    """One line per root capture watches: the agent, what the folder holds, where it is and
    whether it exists yet (``status``, ``config show``)."""
    return [
        f"{agent.kind} {root.role} folder: {root.path} ({'found' if root.path.is_dir() else 'not found'})"
        for agent, root in enabled_roots(loaded, environ)
    ]


def check_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    """``kinds`` when every one is registered (for the ``agents`` setting); ValueError otherwise."""
    found = tuple(kinds)
    unknown = [kind for kind in found if kind not in _MODULES]
    if unknown:
        raise ValueError(f"unknown agent {unknown[0]!r} (known: {', '.join(KINDS)})")
    return found
