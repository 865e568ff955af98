"""Where Cline's sessions are, which names are safe, and what to skip.

A sessions root holds one folder per session, ``<id>/<id>.messages.json`` (the
conversation) and ``<id>/<id>.json`` (the manifest). Beside them, a session that
delegated work holds one ``<name>.messages.json`` per helper (a sub-agent or a
teammate), with no manifest: part of that session, never a session of its own.
Only names matching
``SAFE_NAME`` are ever used in paths; everything else in the root is skipped,
silently when it is Cline's own bookkeeping, with a warning when it is junk.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from postrun.agents.registry import Listing, Skipped, listing_of_targets
from postrun.errors import NotFound, SourceError, UsageError
from postrun.paths import RELATIVE_GONE, reachable
from postrun.text import printable

SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
MESSAGES_SUFFIX = ".messages.json"
COMPACTION_SUFFIX = ".compaction.json"
# Files Cline itself keeps next to the session folders (never sessions).
CLINE_ROOT_FILES = frozenset(
    {
        "sessions.index.json",
        "subagent-spawn-queue.json",
        "machine-id",
        "sessions.db",
        "sessions.db-wal",
        "sessions.db-shm",
    }
)


OUTSIDE_ROOT = "symlink to outside the sessions folder"


def is_safe_name(name: str) -> bool:
    return name not in (".", "..") and SAFE_NAME.fullmatch(name) is not None


def leads_outside(path: Path, root: Path) -> bool:
    """True when ``path``, its symlinks followed, is not inside ``root`` (a planted symlink)."""
    if _plainly_inside(path, root):
        return False
    return not path.resolve().is_relative_to(root.resolve())


def _plainly_inside(path: Path, root: Path) -> bool:
    """``root/<folder>/<file>`` where neither the folder nor the file is a symlink: it resolves to
    the resolved root's ``<folder>/<file>``. Two ``lstat`` calls instead of one per component of
    both paths (resolving them costs about 5 µs of every step of a cold ingest)."""
    folder = path.parent
    if folder.parent != root or path.name == ".." or folder.name == "..":
        return False
    try:
        return not (stat.S_ISLNK(os.lstat(path).st_mode) or stat.S_ISLNK(os.lstat(folder).st_mode))
    except OSError:
        return False  # gone or unreadable: resolving tells


@functools.lru_cache(maxsize=64)
def _session_paths(sessions_root: Path, session_id: str) -> tuple[Path, Path, Path]:
    """The paths of a session in a root, made once for the few sessions being read right now
    (reading and mapping one asks for them a dozen times; each ``Path`` costs microseconds)."""
    folder = sessions_root / session_id
    return folder, folder / f"{session_id}{MESSAGES_SUFFIX}", folder / f"{session_id}.json"


@functools.lru_cache(maxsize=64)
def _compaction_path(folder: Path, session_id: str) -> Path:
    """Made once for the few sessions being polled or read right now (each poll asks for it)."""
    return folder / f"{session_id}{COMPACTION_SUFFIX}"


class SessionLocation:
    """The files of one session. ``data_dir`` holds globalState.json and settings/.

    A value (compared and hashed by its paths). A session in a root keeps only its id
    and the root; its paths are built when asked for, so a listing of thousands of
    sessions stays small and quick to make.
    """

    __slots__ = ("_files", "session_id", "sessions_root")
    agent = "cline"

    def __init__(self, session_id: str, folder: Path, messages: Path, manifest: Path, sessions_root: Path) -> None:
        self.session_id = session_id
        self.sessions_root = sessions_root
        self._files: tuple[Path, Path, Path] | None = (folder, messages, manifest)

    @classmethod
    def in_root(cls, sessions_root: Path, session_id: str) -> SessionLocation:
        location = cls.__new__(cls)
        location.session_id = session_id
        location.sessions_root = sessions_root
        location._files = None
        return location

    def _paths(self) -> tuple[Path, Path, Path]:
        if self._files is not None:
            return self._files
        return _session_paths(self.sessions_root, self.session_id)

    @property
    def folder(self) -> Path:
        return self._paths()[0]

    @property
    def messages(self) -> Path:
        return self._paths()[1]

    @property
    def where(self) -> Path:
        return self.messages

    @property
    def manifest(self) -> Path:
        return self._paths()[2]

    @property
    def compaction(self) -> Path:
        """The optional compaction sidecar (its summary is recorded, its messages are not)."""
        return _compaction_path(self.folder, self.session_id)

    @property
    def data_dir(self) -> Path:
        return self.sessions_root.parent

    def _key(self) -> tuple[str, Path, Path, Path, Path]:
        return (self.session_id, *self._paths(), self.sessions_root)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionLocation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        folder, messages, manifest = self._paths()
        return (
            f"SessionLocation(session_id={self.session_id!r}, folder={folder!r}, messages={messages!r},"
            f" manifest={manifest!r}, sessions_root={self.sessions_root!r})"
        )


def _absolute(path: str | os.PathLike[str]) -> Path:
    # Absolute and normalized, but symlinks kept: paths stay the ones the user sees.
    return Path(os.path.normpath(Path(path).absolute()))


def _quietly_skipped(name: str) -> str | None:
    """Why an entry of a sessions root is skipped without a warning, if it is."""
    if name.startswith((".", "_")):
        return "hidden entry"
    if name.endswith(".tmp"):
        return "temporary file"
    if name in CLINE_ROOT_FILES:
        return "Cline's own file"
    return None


def list_sessions(root: Path) -> Listing:
    """Every session folder in a sessions root, and what was skipped.

    Raises ``NotFound`` when ``root`` does not exist and ``SourceError`` when it
    cannot be listed. One ``scandir`` of the root and one ``stat`` per session folder:
    the capture lists roots of thousands of sessions at every start.
    """
    root = _absolute(root)
    try:
        with os.scandir(root) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except FileNotFoundError:
        raise NotFound(str(root), "no such folder") from None
    except NotADirectoryError:
        raise SourceError(str(root), "not a folder") from None
    except OSError as exc:
        raise SourceError(str(root), f"cannot list: {exc.strerror or exc}") from None
    sessions: list[SessionLocation] = []
    skipped: list[Skipped] = []
    for entry in entries:
        found = _classify(root, entry)
        if isinstance(found, Skipped):
            skipped.append(found)
        else:
            sessions.append(found)
    return Listing(tuple(sessions), tuple(skipped))


def _classify(root: Path, entry: os.DirEntry[str]) -> SessionLocation | Skipped:
    name = entry.name
    quiet = _quietly_skipped(name)
    if quiet:
        return Skipped(root / name, quiet, warn=False)
    if not is_safe_name(name):
        return Skipped(root / name, "unsafe name", warn=True)
    if entry.is_symlink():
        path = root / name
        if not path.exists():
            return Skipped(path, "broken symlink", warn=True)
        if leads_outside(path, root):
            return Skipped(path, OUTSIDE_ROOT, warn=True)
    try:
        is_dir = entry.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        return Skipped(root / name, "not a session folder", warn=True)
    folder = entry.path
    if _exists(f"{folder}/{name}{MESSAGES_SUFFIX}"):
        if "__" in name and not _exists(f"{folder}/{name}.json"):
            # Early Cline builds kept subagent transcripts in sibling folders.
            return Skipped(root / name, "subagent transcript folder", warn=False)
        return SessionLocation.in_root(root, name)
    if _exists(f"{folder}/{name}.json"):
        return Skipped(root / name, "no messages file yet", warn=False)
    return Skipped(root / name, f"no {name}{MESSAGES_SUFFIX}", warn=True)


def folder_files(folder: Path) -> list[str] | None:
    """The names of a session folder's entries that are not folders, sorted (one ``scandir``);
    None when it cannot be listed."""
    try:
        with os.scandir(folder) as scan:
            return sorted(entry.name for entry in scan if not entry.is_dir())
    except OSError:
        return None


def helper_transcripts(location: SessionLocation, names: list[str] | None = None) -> tuple[tuple[str, Path], ...]:
    """The helper transcripts beside a session's own, as (actor id, path), sorted by name.

    Every ``<name>.messages.json`` of the session's folder (``names``: its ``folder_files``,
    listed now when not given) but the lead's, with a safe name; temp files and hidden entries
    are Cline's work in progress. An unreadable folder has none (reading the lead transcript
    reports the folder).
    """
    folder = location.folder
    if names is None:
        names = folder_files(folder)
    if names is None:
        return ()
    found: list[tuple[str, Path]] = []
    for name in names:
        stem = name.removesuffix(MESSAGES_SUFFIX)
        if stem == name or stem == location.session_id or _quietly_skipped(name) or not is_safe_name(stem):
            continue
        found.append((stem, folder / name))
    return tuple(found)


def _exists(path: str) -> bool:
    return os.path.exists(path)  # noqa: PTH110 - a string path: no Path object per session folder


SESSIONS_FOLDER = "sessions"  # a data folder's sessions root


def resolve_targets(targets: Iterable[str | os.PathLike[str]], default_root: Path) -> Listing:
    """The sessions named by ``postrun ingest`` targets, in order, without duplicates.

    An existing path wins over a bare id: a session folder, a messages file, or any
    other folder (a sessions root: every session in it; a data folder holding ``sessions/``). Anything else is a session
    id looked up in ``default_root``. A target that names no session (``NotFound``,
    ``UsageError``, an unreadable folder) is a failure of its own: the others still count.
    """
    return listing_of_targets(targets, lambda target: _resolve_target(target, default_root))


def _resolve_target(target: str, default_root: Path) -> Listing:
    where = printable(target) if target else "''"  # targets are typed by people: show them safely
    # None: a relative path given where the working directory was removed; it can still be an id.
    path = _absolute(target) if reachable(Path(target)) else None
    if target and path is not None and path.exists():
        if path.is_dir():
            if (path / f"{path.name}{MESSAGES_SUFFIX}").exists():
                _require_safe(path.name, where)
                return Listing((SessionLocation.in_root(path.parent, path.name),))
            listing = list_sessions(path)
            if not listing.sessions and (path / SESSIONS_FOLDER).is_dir():
                # A data folder (Cline's own, or what `postrun raw --to` wrote): its sessions.
                return list_sessions(path / SESSIONS_FOLDER)
            return listing
        if path.name.endswith(MESSAGES_SUFFIX):
            session_id = path.name.removesuffix(MESSAGES_SUFFIX)
            _require_safe(session_id, where)
            folder = path.parent
            lead = folder / f"{folder.name}{MESSAGES_SUFFIX}"
            if session_id != folder.name and is_safe_name(folder.name) and lead.exists():
                # A helper has no session of its own: its lead's session takes it along.
                note = f"{where}: a helper transcript of session {folder.name}: ingesting that session"
                return Listing((SessionLocation.in_root(folder.parent, folder.name),), notes=(note,))
            manifest = folder / f"{session_id}.json"
            return Listing((SessionLocation(session_id, folder, path, manifest, folder.parent),))
        raise UsageError(where, "not a session folder, a messages file or a sessions folder")
    if is_safe_name(target):
        location = SessionLocation.in_root(_absolute(default_root), target)
        if location.messages.exists():
            return Listing((location,))
        raise NotFound(where, f"no such session in {location.sessions_root} (pass the session folder or messages file)")
    if path is None:
        raise UsageError(where, RELATIVE_GONE)
    if os.sep in target:
        raise NotFound(where, "no such file or folder")
    raise UsageError(where, "not a session id, a session folder or a messages file")


def _require_safe(session_id: str, target: str) -> None:
    if not is_safe_name(session_id):
        raise UsageError(target, f"unsafe session id {session_id!r}")


def session_id_for_event(root: Path, path: str | os.PathLike[str]) -> str | None:
    """The session a file-system event under ``root`` is about, if any.

    Any path inside a session folder maps to that session (writers rename temp
    files over the real ones, so event types cannot be trusted); temp files,
    hidden entries, unsafe names and Cline's own root files map to None.
    """
    # Strings, no Path objects: every event of a busy session comes through here.
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))  # noqa: PTH100 - symlinks kept
    parts = relative.split(os.sep)  # noqa: PTH206 - normalized by relpath
    if parts[0] in (".", ".."):
        return None
    name = parts[0]
    if _quietly_skipped(name) or not is_safe_name(name) or parts[-1].endswith(".tmp"):
        return None
    if len(parts) == 1 and name.endswith(".json"):
        return None  # a file in the root itself, never a session folder
    return name
