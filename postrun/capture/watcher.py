"""File-system events as hints: "session X may have changed", nothing more.

The watcher watches an agent's root (not recursively: new session folders) plus the folders
of the most recently active sessions (``Source.watch_folders``; a folder two sessions share is
watched once), at most ``max_folders`` sessions' worth, rather than
a recursive watch over thousands of finished sessions. Each watchdog ``schedule()`` is an
emitter thread, and inotify watches are a per-user kernel budget shared with every other
program, so the cap matters; the poller covers every session left unwatched.

Event types are never trusted (Cline rewrites in place, and some files arrive by rename):
the source maps any event path to the session it is about (``Source.session_for_event``), a
moved event counts for both ends, and ``*.tmp`` files and other non-session names are ignored.
Only open and close-without-write events are not subscribed to: they are reads (ours
included), never changes.

Every method except ``want`` and the event callback runs on the poller's thread.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from postrun.agents.registry import Source, as_source

MAX_FOLDER_WATCHES = 32

# Everything that can mean "this file or folder changed".
CHANGE_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]

Hint = Callable[[str | None], None]  # a session id, or None for "something about the root itself"

_LIMIT_REASONS = {
    errno.ENOSPC: "the inotify watch limit is reached (fs.inotify.max_user_watches)",
    errno.EMFILE: "the inotify instance limit is reached (fs.inotify.max_user_instances)",
}


class _Hints(FileSystemEventHandler):
    def __init__(self, source: Source, hint: Hint, folder_appeared: Callable[[str], None]) -> None:
        self.source = source
        self.root_text = os.fspath(source.root)
        self.hint = hint
        self.folder_appeared = folder_appeared

    def on_any_event(self, event: FileSystemEvent) -> None:
        for raw in (event.src_path, event.dest_path):
            if not raw:
                continue
            path = os.fsdecode(raw)
            if path == self.root_text:
                self.hint(None)
                continue
            session_id = self.source.session_for_event(path)
            if session_id is not None:
                if event.is_directory and event.event_type in ("created", "moved"):
                    self.folder_appeared(session_id)
                self.hint(session_id)


class SessionWatcher:
    """A watchdog observer over one root of one agent and its active sessions' folders."""

    def __init__(
        self,
        root: Path | Source,
        hint: Hint,
        *,
        logger: logging.Logger,
        max_folders: int = MAX_FOLDER_WATCHES,
        observer_factory: Callable[[], BaseObserver] = Observer,
    ) -> None:
        self.source = as_source(root)
        self.root = self.source.root
        self.logger = logger
        self.max_folders = max_folders
        self._observer_factory = observer_factory
        self._handler = _Hints(self.source, hint, self._folder_appeared)
        self._observer: BaseObserver | None = None
        self._root_watch: ObservedWatch | None = None
        self._root_identity: tuple[int, int] | None = None
        self._folders: dict[str, tuple[Path, ...]] = {}  # session -> its folders being watched
        self._watches: dict[Path, ObservedWatch] = {}  # folder -> its watch
        self._wanted: OrderedDict[str, None] = OrderedDict()  # most recently active last
        self._wanted_lock = threading.Lock()
        # Watched sessions a folder of which appeared since their watches were set (Claude
        # Code makes ``<id>/subagents/`` after the transcript): the next sync watches it too.
        self._grown: set[str] = set()
        self._limit_logged = False

    # -- any thread --------------------------------------------------------------------

    def want(self, session_id: str) -> None:
        """The session just changed: watch its folder (it may well change again soon)."""
        with self._wanted_lock:
            self._wanted[session_id] = None
            self._wanted.move_to_end(session_id)
            while len(self._wanted) > self.max_folders:
                self._wanted.popitem(last=False)

    def needs_sync(self) -> bool:
        """True when a watched session has a folder that is not watched yet (the poller should sync now)."""
        with self._wanted_lock:
            return bool(self._grown)

    def _folder_appeared(self, session_id: str) -> None:
        if session_id in self._folders:
            with self._wanted_lock:
                self._grown.add(session_id)

    # -- the poller's thread -----------------------------------------------------------

    @property
    def watched_folders(self) -> frozenset[str]:
        """The sessions whose folders are watched."""
        return frozenset(self._folders)

    def sync(self, root_identity: tuple[int, int] | None) -> list[str]:
        """Bring the watches in line with the root (``(st_dev, st_ino)``, None when missing)
        and the wanted folders; re-arms a watch that died (root deleted and recreated).

        Returns the sessions whose folder watch is new: their files may have changed before
        the watch existed, so the caller looks at them once more.
        """
        alive = self._alive_watches()
        for session_id, folders in list(self._folders.items()):
            if not all(self._watches[folder] in alive for folder in folders):
                self._drop(session_id)
        if self._root_watch is not None and (self._root_watch not in alive or root_identity != self._root_identity):
            self._unschedule(self._root_watch)
            self._root_watch = None
        if root_identity is None:
            for session_id in list(self._folders):  # the folders went with the root
                self._drop(session_id)
            return []
        if self._root_watch is None:
            self._root_watch = self._schedule(self.root, follow_symlink=True)
            self._root_identity = root_identity if self._root_watch is not None else None
            if self._root_watch is None:
                return []
        with self._wanted_lock:
            wanted = list(self._wanted)
            grown, self._grown = self._grown, set()
        for session_id in set(self._folders) - set(wanted):
            self._drop(session_id)
        armed: list[str] = []
        for session_id in wanted:
            if session_id in self._folders:
                if session_id in grown and self._watch_grown(session_id):
                    armed.append(session_id)
                continue
            folders = tuple(folder for folder in self.source.watch_folders(session_id) if folder.is_dir())
            if not folders:
                with self._wanted_lock:
                    self._wanted.pop(session_id, None)
                continue
            if not self._watch_all(folders):
                break  # out of watches: the poller covers the rest
            self._folders[session_id] = folders
            armed.append(session_id)
        return armed

    def stop(self) -> None:
        observer, self._observer = self._observer, None
        self._root_watch = None
        self._folders.clear()
        self._watches.clear()
        if observer is not None and observer.is_alive():
            observer.stop()
            observer.join(5)

    # -- internals ---------------------------------------------------------------------

    def _watch_grown(self, session_id: str) -> bool:
        """Watch the session's folders that appeared since it was armed; True when one did."""
        known = self._folders[session_id]
        new = tuple(
            folder for folder in self.source.watch_folders(session_id) if folder not in known and folder.is_dir()
        )
        if not new or not self._watch_all(new):
            return False
        self._folders[session_id] = (*known, *new)
        return True

    def _watch_all(self, folders: tuple[Path, ...]) -> bool:
        """Watch each folder not watched yet; False when one cannot be."""
        for folder in folders:
            if folder not in self._watches:
                watch = self._schedule(folder)
                if watch is None:
                    self._release()  # those just scheduled for this session
                    return False
                self._watches[folder] = watch
        return True

    def _drop(self, session_id: str) -> None:
        self._folders.pop(session_id, None)
        self._release()

    def _release(self) -> None:
        """Stop watching the folders no watched session needs (another may share one)."""
        in_use = {folder for folders in self._folders.values() for folder in folders}
        for folder in [folder for folder in self._watches if folder not in in_use]:
            self._unschedule(self._watches.pop(folder))

    def _ensure_observer(self) -> BaseObserver | None:
        if self._observer is None:
            try:
                observer = self._observer_factory()
                observer.start()
            except OSError as exc:
                self._log_limit(exc)
                return None
            self._observer = observer
        return self._observer

    def _schedule(self, path: Path, *, follow_symlink: bool = False) -> ObservedWatch | None:
        """Watch one folder. ``follow_symlink`` for the root alone: the folder the user set (or
        ``~/.claude/projects``) may be a symlink, and watchdog's default (inotify's
        IN_DONT_FOLLOW) then watches the link itself, so no event ever came from the folder."""
        observer = self._ensure_observer()
        if observer is None:
            return None
        try:
            return observer.schedule(
                self._handler,
                os.fspath(path),
                recursive=False,
                event_filter=CHANGE_EVENTS,
                follow_symlink=follow_symlink,
            )
        except FileNotFoundError:
            return None  # gone meanwhile: the next sync sees it
        except OSError as exc:
            self._log_limit(exc)
            return None

    def _unschedule(self, watch: ObservedWatch) -> None:
        if self._observer is not None:
            with contextlib.suppress(KeyError):  # never fully scheduled
                self._observer.unschedule(watch)

    def _alive_watches(self) -> set[ObservedWatch]:
        """The watches whose emitter runs: one pass over the emitters, not one per watch (a
        sync on every poll tick checks all of them)."""
        if self._observer is None:
            return set()
        return {emitter.watch for emitter in self._observer.emitters if emitter.is_alive()}

    def _log_limit(self, exc: OSError) -> None:
        if self._limit_logged:
            return
        self._limit_logged = True
        reason = _LIMIT_REASONS.get(exc.errno or 0, exc.strerror or str(exc))
        kind = self.source.adapter.kind
        self.logger.warning(f"{kind}: cannot watch more folders: {reason}; polling covers the rest")
