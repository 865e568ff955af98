"""The sessions ``postrun ingest --agent codex`` targets name: a thread id, a rollout file, a
day folder or a sessions folder.

A session is its root thread's rollout with every child rollout of it, wherever in the
sessions folder (and its archive) they are: a sub-agent started after midnight lives in the
next day's folder. So a target is resolved against the whole folder it is in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from postrun.agents.codex.layout import SessionLocation
from postrun.agents.codex.locate import ARCHIVE, SESSIONS, group_sessions, list_rollouts, rollout_at, waiting_reason
from postrun.agents.codex.reading import read_metas
from postrun.agents.registry import Listing, Skipped, listing_of_targets
from postrun.errors import NotFound, SourceError, UsageError
from postrun.paths import RELATIVE_GONE, reachable
from postrun.text import printable

THREAD_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DAY = (re.compile(r"\d{4}"), re.compile(r"\d{2}"), re.compile(r"\d{2}"))


@dataclass(frozen=True, slots=True)
class _Tree:
    sessions: tuple[SessionLocation, ...]
    skipped: tuple[Skipped, ...]
    problems: tuple[tuple[Path, SourceError], ...]  # the rollouts that cannot be read, and why

    def of_thread(self, thread_id: str) -> SessionLocation | None:
        for session in self.sessions:
            if session.session_id == thread_id or any(child.thread_id == thread_id for child in session.children):
                return session
        return None


def resolve_targets(targets: Iterable[str | os.PathLike[str]], sessions_folder: Path, *, max_bytes: int) -> Listing:
    """The sessions named by ``targets``, in order, without duplicates. An existing path wins
    over a bare id, which is looked up in ``sessions_folder`` (and its archive)."""
    trees: dict[Path, _Tree] = {}

    def tree(folder: Path) -> _Tree:
        if folder not in trees:
            listing = list_rollouts(folder)
            metas, problems = read_metas(listing.rollouts, max_bytes=max_bytes)
            # An unreadable rollout is reported once, here; it is no session to read again.
            readable = [rollout for rollout in listing.rollouts if rollout.thread_id not in problems]
            unreadable = tuple((r.path, problems[r.thread_id]) for r in listing.rollouts if r.thread_id in problems)
            trees[folder] = _Tree(tuple(group_sessions(readable, metas)), listing.skipped, unreadable)
        return trees[folder]

    # The folders named as targets (in the sessions folder they are of): their unreadable
    # rollouts and odd entries are reported; a thread's target reads only its own.
    reported: dict[tuple[Path, Path], None] = {}

    def folder_tree(folder: Path, named: Path) -> _Tree:
        reported.setdefault((folder, named))
        return tree(folder)

    def resolve(target: str) -> Listing:
        where = printable(target) or "''"
        sessions, note = _resolve(target, where, sessions_folder, tree, folder_tree)
        if len(sessions) == 1 and sessions[0].root is None and not os.path.isdir(target):  # noqa: PTH112
            raise NotFound(where, waiting_reason(sessions[0]))  # a child's rollout, named alone
        found = tuple(session for session in sessions if session.root is not None)
        waiting = [session for session in sessions if session.root is None]
        skipped = tuple(Skipped(child.path, waiting_reason(s), True) for s in waiting for child in s.children)
        return Listing(found, skipped, notes=(note,) if note else ())

    listing = listing_of_targets(targets, resolve)
    skipped = {entry.path: entry for entry in listing.skipped}
    unreadable: dict[Path, SourceError] = {}  # once, whichever targets hold it
    for folder, named in reported:
        skipped.update((e.path, e) for e in trees[folder].skipped if e.path.is_relative_to(named))
        unreadable.update((path, e) for path, e in trees[folder].problems if path.is_relative_to(named))
    return replace(listing, skipped=tuple(skipped.values()), failures=(*listing.failures, *unreadable.values()))


def _resolve(
    target: str,
    where: str,
    sessions_folder: Path,
    of: Callable[[Path], _Tree],
    listed: Callable[[Path, Path], _Tree],
) -> tuple[list[SessionLocation], str]:
    """``of``: a sessions folder's tree; ``listed``: the same, for a folder named as a target."""
    path = Path(target).expanduser()
    if target and path.exists():
        path = path.absolute()
        if path.is_dir():
            folder, whole_tree = _tree_of(path)
            # A sessions folder's odd entries are reported with its archive's, beside it.
            whole = listed(folder, path.parent if folder == path else path)
            if whole_tree:
                return list(whole.sessions), ""
            ids = {rollout.thread_id for rollout in list_rollouts(path).rollouts if path in rollout.path.parents}
            return [session for session in whole.sessions if _holds(session, ids)], ""
        rollout = rollout_at(path, archived=path.parent.name == ARCHIVE)
        if rollout is None:
            raise UsageError(
                where, "not a rollout (rollout-<time>-<thread id>.jsonl[.zst]), a day folder or a sessions folder"
            )
        return _session_of(rollout.thread_id, where, of(_folder_of(path)), path)
    if THREAD_ID.fullmatch(target):
        return _session_of(target.lower(), where, of(sessions_folder.absolute()), None)
    if target and not reachable(path):
        raise UsageError(where, RELATIVE_GONE)
    if os.sep in target:
        raise NotFound(where, "no such file or folder")
    raise UsageError(where, "not a thread id, a rollout file, a day folder or a sessions folder")


def _session_of(thread_id: str, where: str, tree: _Tree, path: Path | None) -> tuple[list[SessionLocation], str]:
    session = tree.of_thread(thread_id)
    if session is None and path is not None:
        # A rollout outside any sessions folder Postrun knows the layout of: itself alone.
        rollout = rollout_at(path, archived=path.parent.name == ARCHIVE)
        assert rollout is not None
        return [SessionLocation(thread_id, rollout)], ""
    if session is None:
        raise NotFound(where, "no rollout of that thread in the sessions folder (pass the rollout file)")
    if session.session_id != thread_id:
        return [session], f"{where}: a sub-agent rollout of session {session.session_id}: ingesting that session"
    return [session], ""


def _holds(session: SessionLocation, ids: set[str]) -> bool:
    return any(rollout.thread_id in ids for rollout in session.rollouts)


def _tree_of(folder: Path) -> tuple[Path, bool]:
    """The sessions folder a folder named to ``ingest`` is (or is in), and whether it names all
    of it. Resolved against that sessions folder, a rollout is named in the vault as in Codex's
    home whichever folder was named: Codex's home (``~/.codex``, or a folder ``raw`` wrote),
    its archive, a year, month or day folder, or the sessions folder itself."""
    if folder.name == ARCHIVE:
        return folder.parent / SESSIONS, False
    if (folder / SESSIONS).is_dir() or (folder / ARCHIVE).is_dir():
        return folder / SESSIONS, True
    depth = _date_depth(folder)
    if depth:
        return folder.parents[depth - 1], False
    return folder, True


def _date_depth(path: Path) -> int:
    """3 for a day folder (``YYYY/MM/DD``), 2 for a month's, 1 for a year's, else 0."""
    for depth in (3, 2, 1):
        parts = path.parts[-depth:]
        if len(parts) == depth and all(pattern.fullmatch(part) for pattern, part in zip(_DAY, parts, strict=False)):
            return depth
    return 0


def _is_day(path: Path) -> bool:
    return _date_depth(path) == 3


def _folder_of(rollout: Path) -> Path:
    """The sessions folder a rollout file is in: above its day folders, or beside its archive."""
    folder = rollout.parent
    if folder.name == ARCHIVE:
        return folder.parent / SESSIONS
    if _is_day(folder):
        return folder.parents[2]
    return folder
