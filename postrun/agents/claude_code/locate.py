"""Where Claude Code's sessions are, which names are safe, and what to skip.

A projects root (``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``) holds one
folder per working directory (its slug: the path with every other character than a letter
or digit made ``-``; lossy, never parsed). A session is a ``<id>.jsonl`` directly in a slug
folder; the folder ``<id>/`` beside it holds its sub-agents (``subagents/agent-<id>.jsonl``
and ``.meta.json``) and large tool outputs (``tool-results/``): part of that session, never
sessions of their own. Only names matching ``SAFE_NAME`` are ever used in paths.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from postrun.agents.claude_code.strays import is_old_subagent, named_session, old_subagents
from postrun.agents.registry import Listing, Location, Skipped, listing_of_targets
from postrun.errors import NotFound, PostrunError, SourceError, UsageError
from postrun.paths import RELATIVE_GONE, env_value, expand_named, home_dir, reachable
from postrun.text import printable

AGENT = "claude-code"
SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
SUFFIX = ".jsonl"
META_SUFFIX = ".meta.json"
SUBAGENTS = "subagents"
TOOL_RESULTS = "tool-results"
CONFIG_VARIABLE = "CLAUDE_CONFIG_DIR"
OUTSIDE_ROOT = "symlink to outside the projects folder"
OLD_SUBAGENT = "a sub-agent's transcript (Claude Code before 2.1): read with the session it names"


def is_safe_name(name: str) -> bool:
    return name not in (".", "..") and SAFE_NAME.fullmatch(name) is not None


def projects_root(environ: Mapping[str, str], *, base: Path | None) -> tuple[Path, str | None]:
    """Claude Code's projects folder, and the variable that decided it (None: the HOME default)."""
    home = home_dir(environ)
    config = env_value(environ, CONFIG_VARIABLE)
    if config is not None:
        return expand_named(config, CONFIG_VARIABLE, home=home, base=base) / "projects", CONFIG_VARIABLE
    return home / ".claude" / "projects", None


@dataclass(frozen=True, slots=True)
class SessionLocation:
    """The files of one session: ``<root>/<slug>/<id>.jsonl`` and its folder ``<root>/<slug>/<id>/``."""

    projects_root: Path
    slug: str
    session_id: str

    @property
    def agent(self) -> str:
        return AGENT

    @property
    def where(self) -> Path:
        """The file that makes or breaks the session: its transcript."""
        return self.transcript

    @property
    def source(self) -> Path:
        """The folder the session's transcript is in (its slug folder)."""
        return self.projects_root / self.slug

    @property
    def transcript(self) -> Path:
        return self.projects_root / self.slug / f"{self.session_id}{SUFFIX}"

    @property
    def folder(self) -> Path:
        return self.projects_root / self.slug / self.session_id

    @property
    def subagents(self) -> Path:
        return self.folder / SUBAGENTS

    @property
    def tool_results(self) -> Path:
        return self.folder / TOOL_RESULTS

    def relative(self, path: Path) -> str:
        """``path`` relative to the projects root (how the vault names a file)."""
        return os.path.relpath(path, self.projects_root)


def _absolute(path: str | os.PathLike[str]) -> Path:
    # Absolute and normalized, but symlinks kept: paths stay the ones the user sees.
    return Path(os.path.normpath(Path(path).absolute()))


def _quiet(name: str) -> bool:
    return name.startswith(".") or name.endswith(".tmp") or ".tmp." in name


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except FileNotFoundError:
        raise NotFound(str(folder), "no such folder") from None
    except NotADirectoryError:
        raise SourceError(str(folder), "not a folder") from None
    except OSError as exc:
        raise SourceError(str(folder), f"cannot list: {exc.strerror or exc}") from None


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def list_sessions(root: Path) -> Listing:
    """Every session in a projects root (one ``scandir`` per slug folder), and what was skipped.

    Raises ``NotFound`` when ``root`` does not exist and ``SourceError`` when it cannot be listed.
    """
    root = _absolute(root)
    sessions: list[Location] = []
    skipped: list[Skipped] = []
    for entry in _scan(root):
        name = entry.name
        if _quiet(name):
            continue
        if not is_safe_name(name):
            skipped.append(Skipped(root / name, "unsafe name", warn=True))
        elif entry.is_symlink() and _leads_outside(root / name, root):
            skipped.append(Skipped(root / name, OUTSIDE_ROOT, warn=True))
        elif not _is_dir(entry):
            skipped.append(Skipped(root / name, "not a project folder", warn=True))
        else:
            try:
                found = list_project(root, name)
            except PostrunError as exc:
                skipped.append(Skipped(root / name, exc.reason, warn=True))
                continue
            sessions.extend(found.sessions)
            skipped.extend(found.skipped)
    return Listing(tuple(sessions), tuple(skipped))


def list_project(root: Path, slug: str) -> Listing:
    """The sessions of one slug folder: its ``<id>.jsonl`` files with a safe id."""
    folder = root / slug
    sessions: list[SessionLocation] = []
    skipped: list[Skipped] = []
    for entry in _scan(folder):
        name = entry.name
        if _quiet(name) or _is_dir(entry):
            continue  # a session's own folder, ``memory/``, Claude Code's work in progress
        stem = name.removesuffix(SUFFIX)
        if stem == name:
            continue
        if is_old_subagent(name):
            # claude-code.md §1: sub-agents are never sessions of their own (``strays``).
            skipped.append(Skipped(folder / name, OLD_SUBAGENT, warn=False))
            continue
        if not is_safe_name(stem):
            skipped.append(Skipped(folder / name, "unsafe name", warn=True))
        elif entry.is_symlink() and _leads_outside(folder / name, root):
            skipped.append(Skipped(folder / name, OUTSIDE_ROOT, warn=True))
        else:
            sessions.append(SessionLocation(root, slug, stem))
    return Listing(tuple(sessions), tuple(skipped))


def subagent_files(location: SessionLocation) -> tuple[tuple[str, Path, Path], ...]:
    """The session's sub-agent transcripts as (actor id, transcript, meta.json), sorted by id.

    Every ``agent-<id>.jsonl`` of ``subagents/`` with a safe name; the meta file may not exist.
    """
    folder = location.subagents
    try:
        with os.scandir(folder) as scan:
            names = sorted(entry.name for entry in scan if not _is_dir(entry))
    except OSError:
        return ()
    found: list[tuple[str, Path, Path]] = []
    for name in names:
        stem = name.removesuffix(SUFFIX)
        if stem == name or not stem.startswith("agent-") or _quiet(name) or not is_safe_name(stem):
            continue
        found.append((stem, folder / name, folder / f"{stem}{META_SUFFIX}"))
    return tuple(found)


def old_subagent_files(location: SessionLocation) -> tuple[tuple[str, Path, Path], ...]:
    """The session's sub-agent transcripts in the layout before 2.1 (``<slug>/agent-<id>.jsonl``
    naming the session on its lines), as ``subagent_files`` gives them; they have no meta.json."""
    found: list[tuple[str, Path, Path]] = []
    for name in old_subagents(location.source, location.session_id):
        stem = name.removesuffix(SUFFIX)
        if is_safe_name(stem) and not _quiet(name):
            found.append((stem, location.source / name, location.source / f"{stem}{META_SUFFIX}"))
    return tuple(found)


def every_subagent_file(location: SessionLocation) -> tuple[tuple[str, Path, Path], ...]:
    """``subagent_files``, then the old layout's of an actor id not among them."""
    found = subagent_files(location)
    known = {actor_id for actor_id, _, _ in found}
    return (*found, *(old for old in old_subagent_files(location) if old[0] not in known))


def owner_of_old_subagent(path: Path) -> SessionLocation | None:
    """The session a ``<slug>/agent-<id>.jsonl`` names, when that session's transcript is beside it."""
    session_id = named_session(path)
    slug = path.parent
    if session_id is None or not is_safe_name(session_id) or not is_safe_name(slug.name):
        return None
    location = SessionLocation(slug.parent, slug.name, session_id)
    return location if location.transcript.is_file() else None


def tool_result_files(location: SessionLocation) -> tuple[Path, ...]:
    """The files of ``tool-results/`` with a safe name, sorted."""
    try:
        with os.scandir(location.tool_results) as scan:
            names = sorted(entry.name for entry in scan if entry.is_file(follow_symlinks=False))
    except OSError:
        return ()
    return tuple(location.tool_results / name for name in names if is_safe_name(name) and not _quiet(name))


def leads_outside(path: Path, location: SessionLocation) -> bool:
    """True when ``path``, its symlinks followed, is not inside the projects root (a planted symlink)."""
    return _leads_outside(path, location.projects_root)


def _leads_outside(path: Path, root: Path) -> bool:
    if _plainly_inside(path, root):
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except OSError:
        return True


def _plainly_inside(path: Path, root: Path) -> bool:
    """``path`` is below ``root`` as written and nothing between them is a symlink: an
    ``lstat`` per level instead of resolving both paths (a read of a session checks every file)."""
    text, top = os.fspath(path), os.fspath(root)
    if not text.startswith(top + os.sep) or f"{os.sep}..{os.sep}" in text[len(top) :] + os.sep:
        return False
    try:
        if stat.S_ISLNK(os.lstat(text).st_mode):
            return False
        return _folder_plainly_inside(os.path.dirname(text), top)  # noqa: PTH120 - strings: no Path per level
    except OSError:
        return False  # gone or unreadable: resolving tells


def _folder_plainly_inside(folder: str, top: str) -> bool:
    while folder != top:
        if stat.S_ISLNK(os.lstat(folder).st_mode):
            return False
        folder = os.path.dirname(folder)  # noqa: PTH120
    return True


def resolve_targets(targets: Iterable[str | os.PathLike[str]], default_root: Path) -> Listing:
    """The sessions named by ``postrun ingest`` targets, in order, without duplicates.

    An existing path wins over a bare id: a ``<id>.jsonl``, a session's folder (or a folder in
    it), a slug folder, a projects root, or Claude's config folder (holding ``projects/``).
    A sub-agent's file or folder names its parent session. Anything else is a session id
    looked up in every slug folder of ``default_root``. A target that names no session is a
    failure of its own: the others still count.
    """
    return listing_of_targets(targets, lambda target: _resolve_target(target, default_root))


def _resolve_target(target: str, default_root: Path) -> Listing:
    where = printable(target) if target else "''"  # targets are typed by people: show them safely
    # None: a relative path given where the working directory was removed; it can still be an id.
    path = _absolute(target) if reachable(Path(target)) else None
    if target and path is not None and path.exists():
        owner = _owning_session(path, where)
        if owner is not None:
            return owner
        if not path.is_dir():
            raise UsageError(where, "not a session transcript (<id>.jsonl), a session folder or a projects folder")
        # Claude's config folder: its ``projects/`` holds the slug folders. A stray ``.jsonl``
        # right in ``projects/`` must not make it read as a projects root whose slug is
        # ``projects`` (every real slug starts with ``-``): its sessions would all be missed.
        projects = path / "projects"
        if projects.is_dir() and (any(projects.glob(f"*/*{SUFFIX}")) or not any(path.glob(f"*/*{SUFFIX}"))):
            return list_sessions(projects)
        # A project folder holds transcripts; a projects root holds folders that do.
        if any(path.glob(f"*{SUFFIX}")) and not any(path.glob(f"*/*{SUFFIX}")):
            return list_project(path.parent, path.name)
        return list_sessions(path)
    if is_safe_name(target):
        return Listing((find_session(_absolute(default_root), target, where),))
    if path is None:
        raise UsageError(where, RELATIVE_GONE)
    if os.sep in target:
        raise NotFound(where, "no such file or folder")
    raise UsageError(where, "not a session id, a session transcript or a projects folder")


def _owning_session(path: Path, where: str) -> Listing | None:
    """The session ``path`` is or belongs to: its transcript, its folder, or anything in that
    folder (a sub-agent's file names its parent session); None for anything else."""
    if path.is_file() and path.name.endswith(SUFFIX) and path.parent.name != SUBAGENTS:
        if is_old_subagent(path.name):
            owner = owner_of_old_subagent(path)
            if owner is None:
                raise NotFound(where, "a sub-agent's transcript whose lines name no session beside it")
            note = f"{where}: a sub-agent of session {owner.session_id}: ingesting that session"
            return Listing((owner,), notes=(note,))
        return Listing((_location(path.parent, path.name.removesuffix(SUFFIX), where),))
    # The session folder itself, ``subagents/`` or ``tool-results/``, or a file in one of them.
    for folder in (path, *path.parents[:2]):
        if folder.parent == folder:
            break
        if (folder.parent / f"{folder.name}{SUFFIX}").is_file():
            location = _location(folder.parent, folder.name, where)
            if folder == path:
                return Listing((location,))
            if path.relative_to(folder).parts[0] == SUBAGENTS:
                note = f"{where}: a sub-agent of session {location.session_id}: ingesting that session"
                return Listing((location,), notes=(note,))
            return Listing((location,))
    return None


def _location(slug_folder: Path, session_id: str, where: str) -> SessionLocation:
    if not is_safe_name(session_id):
        raise UsageError(where, f"unsafe session id {session_id!r}")
    if not is_safe_name(slug_folder.name):
        raise UsageError(where, f"unsafe project folder name {slug_folder.name!r}")
    return SessionLocation(slug_folder.parent, slug_folder.name, session_id)


def find_session(root: Path, session_id: str, where: str) -> SessionLocation:
    """The session ``session_id`` in one of the slug folders of ``root``."""
    try:
        slugs = [entry.name for entry in _scan(root) if _is_dir(entry) and is_safe_name(entry.name)]
    except NotFound:
        raise NotFound(where, f"no such session: {root} does not exist") from None
    for slug in slugs:
        location = SessionLocation(root, slug, session_id)
        if location.transcript.is_file() and not is_old_subagent(location.transcript.name):
            return location
    raise NotFound(where, f"no such session in {root} (pass the session's .jsonl file)")


def location_for_event(root: Path, path: str | os.PathLike[str]) -> SessionLocation | None:
    """The session a file-system event under ``root`` is about, if any.

    ``<slug>/<id>.jsonl`` and anything in ``<slug>/<id>/`` map to session ``<id>``; temp
    files, hidden entries, unsafe names and everything else map to None.
    """
    relative = os.path.relpath(_absolute(path), _absolute(root))
    parts = Path(relative).parts
    if len(parts) < 2 or parts[0] in (".", "..") or any(_quiet(part) for part in parts):
        return None
    slug, name = parts[0], parts[1]
    if len(parts) == 2 and is_old_subagent(name):
        return owner_of_old_subagent(_absolute(root) / slug / name) if is_safe_name(slug) else None
    stem = name.removesuffix(SUFFIX) if len(parts) == 2 else name
    if not is_safe_name(slug) or not is_safe_name(stem):
        return None
    location = SessionLocation(_absolute(root), slug, stem)
    if (len(parts) > 2 or stem == name) and not location.transcript.is_file():
        # A folder of the slug folder that belongs to no session (``memory/``), or a file
        # there that is not a transcript. A session's own ``<id>/`` is its: it appears after
        # the transcript, and its sub-agents' folder in it is then to be watched.
        return None
    return location
