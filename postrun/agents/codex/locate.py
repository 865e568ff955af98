"""Where Codex's rollouts are, and which of them make one session.

``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`` (``.jsonl.zst``
when Codex compressed it), and ``archived_sessions/`` beside the sessions folder. A thread
found twice (being compressed or archived) is read where Codex writes it now: a plain
rollout before a compressed one, the sessions folder before the archive. A rollout whose
``session_meta`` names a parent is a child of the session of its root thread, never a
session of its own; while that root's rollout is not there, the child waits for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from postrun.agents.codex.layout import Rollout, SessionLocation
from postrun.agents.codex.meta import ThreadMeta
from postrun.agents.registry import Skipped

ARCHIVE = "archived_sessions"
SESSIONS = "sessions"
ROLLOUT_NAME = re.compile(
    r"rollout-(?P<time>[^/]*)-(?P<id>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.jsonl(?P<zst>\.zst)?"
)
_MAX_DEPTH = 4  # YYYY/MM/DD, and one more for a hand-made tree


def sessions_folder(environ: Mapping[str, str], home: Path) -> Path:
    """``POSTRUN_CODEX_DIR``, else ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``."""
    chosen = environ.get("POSTRUN_CODEX_DIR")
    if chosen:
        return Path(chosen).expanduser()
    codex_home = environ.get("CODEX_HOME")
    if codex_home:
        return Path(codex_home).expanduser() / "sessions"
    return home / ".codex" / "sessions"


def archive_folder(sessions: Path) -> Path:
    return sessions.parent / ARCHIVE


def rollout_at(path: Path, *, archived: bool = False, folder: Path | None = None) -> Rollout | None:
    """The rollout a file name makes, None when it is not ``rollout-*-<thread id>.jsonl[.zst]``.
    ``folder``: the sessions (or archive) folder it is in, which names it for the vault."""
    match = ROLLOUT_NAME.fullmatch(path.name)
    if match is None:
        return None
    name = path.name
    if folder is not None and path.is_relative_to(folder):
        # Its name in Codex's home, whatever the folder is called or however it was named to
        # ``ingest``: the vault's name of a file is the same at every ingest (else an unchanged
        # rollout makes a new raw version), and ``raw`` lays it out as Codex does (README).
        name = f"{ARCHIVE if archived else SESSIONS}/{path.relative_to(folder).as_posix()}"
    zst = match.group("zst") is not None
    return Rollout(match.group("id").lower(), path, compressed=zst, archived=archived, name=name, folder=folder)


OUTSIDE = "a symlink that leads outside its sessions folder (never followed out of it)"


@dataclass(frozen=True, slots=True)
class Rollouts:
    """The rollouts under a sessions folder and its archive."""

    rollouts: tuple[Rollout, ...]  # one per thread, sorted by thread id
    skipped: tuple[Skipped, ...] = ()


def list_rollouts(sessions: Path) -> Rollouts:
    """Every thread's rollout under ``sessions`` and the archive beside it."""
    found: dict[str, Rollout] = {}
    skipped: list[Skipped] = []
    for folder, archived in ((sessions, False), (archive_folder(sessions), True)):
        for rollout in _walk(folder, folder, archived, 0, skipped):
            kept = found.get(rollout.thread_id)
            if kept is None or _preferred(rollout, kept):
                found[rollout.thread_id] = rollout
    return Rollouts(tuple(found[thread_id] for thread_id in sorted(found)), tuple(skipped))


def _preferred(rollout: Rollout, kept: Rollout) -> bool:
    """Where Codex writes the thread now: not archived, then not compressed."""
    return (rollout.archived, rollout.compressed) < (kept.archived, kept.compressed)


def _walk(top: Path, folder: Path, archived: bool, depth: int, skipped: list[Skipped]) -> Iterable[Rollout]:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        skipped.append(Skipped(folder, f"cannot list: {exc.strerror or exc}", True))
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith((".", "_")):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            linked_dir = not is_dir and entry.is_symlink() and entry.is_dir()
        except OSError:
            is_dir = linked_dir = False
        if is_dir:
            if depth < _MAX_DEPTH:
                yield from _walk(top, path, archived, depth + 1, skipped)
            continue
        if linked_dir:
            # Not walked, as a rollout's symlink is not followed out of its folder; one leading
            # inside names a folder listed anyway. One leading out holds rollouts never read: said.
            if not _leads_inside(path, top):
                skipped.append(Skipped(path, OUTSIDE, True))
            continue
        rollout = rollout_at(path, archived=archived, folder=top)
        if rollout is None:
            skipped.append(Skipped(path, "not a rollout (rollout-<time>-<thread id>.jsonl)", False))
        else:
            yield rollout


def _leads_inside(path: Path, top: Path) -> bool:
    try:
        return path.resolve().is_relative_to(top.resolve())
    except (OSError, RuntimeError):
        return False


def group_sessions(rollouts: Iterable[Rollout], metas: Mapping[str, ThreadMeta]) -> list[SessionLocation]:
    """Sessions of the rollouts, given each one's ``session_meta`` (by thread id; a rollout
    without one yet is a root of its own until its first line is written)."""
    roots: dict[str, Rollout] = {}
    children: dict[str, list[Rollout]] = {}
    for rollout in rollouts:
        meta = metas.get(rollout.thread_id)
        if meta is None or not meta.is_child:
            roots[rollout.thread_id] = rollout
        else:
            children.setdefault(root_of(meta, metas), []).append(rollout)
    sessions = [
        SessionLocation(session_id, roots.get(session_id), tuple(children.get(session_id, ())))
        for session_id in sorted(set(roots) | set(children))
    ]
    return sessions


def waiting_reason(session: SessionLocation) -> str:
    """Why a session's children are not ingested yet: its root thread's rollout is not there."""
    return f"a sub-agent rollout of session {session.session_id}, whose own rollout is not there yet"


def root_of(meta: ThreadMeta, metas: Mapping[str, ThreadMeta]) -> str:
    """The root thread of a child: its ``session_id``, else the top of its parents."""
    if meta.session_id != meta.thread_id and meta.session_id != meta.parent_thread_id:
        return meta.session_id
    current = meta
    for _ in range(64):
        parent = metas.get(current.parent_thread_id or "")
        if parent is None or not parent.is_child:
            return current.parent_thread_id or current.thread_id
        current = parent
    return current.thread_id
