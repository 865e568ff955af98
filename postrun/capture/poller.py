"""The fallback that never misses: a poll every ``poll_seconds`` and a full sweep every few minutes.

A tick stats the root (and asks the source for anything else that moves when a session
appears: ``Source.listing_stamp``); lists it only when that changed (a new session folder
changes the root's mtime) or a hint asked for it; and compares the fingerprints (size, mtime, inode)
of the active sessions only: open ones and those changed in the last 24 hours. A full
sweep compares every session. So an idle capture over 10,000 sessions costs a stat of the
root plus a few stats per active session every tick. The tick also keeps the watcher in
line (re-arms it after the root was deleted and recreated, or appeared late).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from postrun.agents.registry import Listing, Location, Skipped, Source, as_source
from postrun.capture.book import SessionBook, skipped_line
from postrun.capture.dispatcher import Dispatcher
from postrun.capture.freshness import fingerprint_key
from postrun.capture.scheduler import Reason
from postrun.capture.watcher import SessionWatcher
from postrun.errors import NotFound, PostrunError

# A folder that is not a session yet (Cline's without a messages file) may be one being created: it is listed again on
# every tick for this long, and warned about only if it is still not a session after it.
NEW_FOLDER_GRACE_SECONDS = 60.0
# File systems stamp times from a coarse clock (a few ms, up to 2 s on FAT): within this
# long of a change, the root's mtime cannot prove that nothing else changed.
_RACY_NS = 2_000_000_000


@dataclass(frozen=True, slots=True)
class _Folder:
    entry: Skipped
    first_seen: float
    had_messages: bool


class Poller:
    """The poll thread; ``wake`` makes it look at the root now."""

    def __init__(
        self,
        root: Path | Source,
        book: SessionBook,
        dispatcher: Dispatcher,
        watcher: SessionWatcher | None,
        *,
        poll_seconds: float,
        full_sweep_seconds: float,
        logger: logging.Logger,
        on_sweep: Callable[[], None] = lambda: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = as_source(root)
        self.root = self.source.root
        self.kind = self.source.adapter.kind
        self.book = book
        self.dispatcher = dispatcher
        self.watcher = watcher
        self.poll_seconds = poll_seconds
        self.full_sweep_seconds = full_sweep_seconds
        self.logger = logger
        self.on_sweep = on_sweep
        self.monotonic = monotonic
        self._root_state: tuple[int, int, int] | None = None  # (dev, ino, mtime_ns) at the last listing
        self._root_racy = True  # the last listing came so soon after a change that another may hide
        self._names = 0  # a digest of the root's entry names at the last listing
        self._root_present: bool | None = None
        self._stamp: Hashable = None  # the source's listing stamp at the last listing
        self._next_sweep = monotonic() + full_sweep_seconds
        self._folders: dict[str, _Folder] = {}  # folders in the root that were not sessions at the last listing
        self._warned: set[str] = set()
        self._hinted = False
        self.listings = 0  # full listings of the root since start (they are the poll's big cost)
        self._request_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._last_error: str | None = None
        self._thread = threading.Thread(target=self._loop, name="postrun-poll", daemon=True)

    def prime(self, state: tuple[int, int, int] | None, present: Sequence[str], skipped: tuple[Skipped, ...]) -> None:
        """What the start-up listing found: the root's state taken just before it (so the first
        tick does not list again) and the entries it skipped (junk is reported at once)."""
        self._root_present = state is not None
        self._root_state = state
        self._root_racy = _racy(state)
        self._names = self.source.listing_key(Listing(tuple(self.source.location(s) for s in present), skipped))
        self._stamp = self._listing_stamp()
        self._note_skipped(skipped, warn=False, had_messages={})  # not known: looked at on the next tick

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.ident is not None:
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        """An event hinted at something new in the root: tick now (new folders, the watcher;
        fingerprints stay on schedule). What this tick finds is reported as found by an event."""
        with self._request_lock:
            self._hinted = True
        self._wake.set()

    def _loop(self) -> None:
        deadline = self.monotonic() + self.poll_seconds  # the start-up plan has just looked at everything
        while not self._stop.is_set():
            woken = self._wake.wait(max(deadline - self.monotonic(), 0.0))
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                if woken and self.monotonic() < deadline:
                    self.tick(full=False, compare=False)  # a hint: list now, poll on schedule
                else:
                    self.tick(full=self.monotonic() >= self._next_sweep, compare=True)
                    deadline = self.monotonic() + self.poll_seconds
                self._last_error = None
            except Exception as exc:
                message = f"{self.kind}: poll failed: {type(exc).__name__}: {exc}"
                if message != self._last_error:
                    self.logger.error(message, exc_info=self.logger.isEnabledFor(logging.DEBUG))
                    self._last_error = message
                deadline = self.monotonic() + self.poll_seconds

    def tick(self, *, full: bool, compare: bool = True) -> None:
        """One poll: the root, a listing when needed, fingerprints, the watcher."""
        state = root_state(self.root)
        present = state is not None
        if present != self._root_present:
            self._root_changed(present)
        with self._request_lock:
            hinted, self._hinted = self._hinted, False
        reason: Reason = "event" if hinted else "poll"
        if present:
            stamp = self._listing_stamp()
            if state != self._root_state or self._root_racy or full or stamp != self._stamp:
                # The root's mtime moves for any entry created, removed or renamed in it (Cline's
                # own temp files too): list it again only when the names really changed.
                if self._names_changed() or stamp != self._stamp:
                    self._list(reason)
                self._root_state = state
                self._stamp = stamp
                self._root_racy = _racy(state)
            if self._folder_ripened(every=full):
                self._list(reason)
        if compare and present:
            self._compare(self.book.ids() if full else self.book.active())
        if full:
            self._next_sweep = self.monotonic() + self.full_sweep_seconds
            self.book.prune()
            self.dispatcher.prune()
            self.on_sweep()
        if self.watcher is not None:
            armed = self.watcher.sync(None if state is None else state[:2])
            if armed and present:
                # Files written before a folder's watch existed raise no event: look now.
                if self._folder_ripened(every=False, only=armed):
                    self._list("event")
                self._compare([session_id for session_id in armed if session_id in self.book], "event")

    def _root_changed(self, present: bool) -> None:
        if present and self._root_present is False:
            self.logger.info(f"{self.kind}: {self.root} appeared; watching it")
        elif not present and self._root_present:
            self.logger.warning(
                f"{self.kind}: {self.root} is gone; stored sessions are kept, waiting for it to come back"
            )
        self._root_present = present

    def _names_changed(self) -> bool:
        """Whether the root's entry names differ from the last listing's (cheap: names only)."""
        try:
            return self.source.names_key() != self._names
        except OSError:
            return True

    def _listing_stamp(self) -> Hashable:
        try:
            return self.source.listing_stamp()
        except OSError:
            return None

    def _folder_ripened(self, *, every: bool, only: Iterable[str] | None = None) -> bool:
        """Whether a folder that was not a session at the last listing now is one (``Source.ripe``).

        Checked on every tick for folders seen in the last minute (a session being created),
        and for all of them at a full sweep. Only a change triggers a listing: a folder that
        stays junk with a messages file in it is not listed again and again. Folders that
        are still not sessions after a minute are warned about (once).
        """
        now = self.monotonic()
        names = list(self._folders) if only is None else [name for name in only if name in self._folders]
        ripened = False
        for name in names:
            folder = self._folders[name]
            young = now - folder.first_seen < NEW_FOLDER_GRACE_SECONDS
            if not young and folder.entry.warn:
                self._warn_skipped(folder.entry)
            if not ripened and not folder.had_messages and (young or every):
                ripened = self.source.ripe(folder.entry)
        return ripened

    def _list(self, reason: Reason) -> None:
        # Taken before the listing: a messages file that appears during it must still count as
        # news for a folder the listing skipped (else that session would wait for a full sweep).
        had_messages = {name: self.source.ripe(folder.entry) for name, folder in self._folders.items()}
        try:
            listing = self.source.list()
        except NotFound:
            return
        self.listings += 1
        self.logger.debug(f"{self.kind}: listed {self.root} ({len(listing.sessions)} sessions)")
        self._names = self.source.listing_key(listing)
        present = {location.session_id for location in listing.sessions}
        for session_id in set(self.book.ids()) - present:
            self.book.remove(session_id)
            self.dispatcher.forget(session_id)
        for location in listing.sessions:
            if self.book.add(location.session_id):
                self._compare_one(location, reason)
        self._note_skipped(listing.skipped, warn=True, had_messages=had_messages)

    def _note_skipped(self, skipped: tuple[Skipped, ...], *, warn: bool, had_messages: Mapping[str, bool]) -> None:
        """Remember folders that are not sessions (yet); warn about other junk now (or, at
        start-up, about everything: a session is not being created at that very moment)."""
        now = self.monotonic()
        folders: dict[str, _Folder] = {}
        for entry in skipped:
            name = entry.path.name
            if entry.path.is_dir():
                known = self._folders.get(name)
                folders[name] = _Folder(
                    entry, now if known is None else known.first_seen, had_messages.get(name, False)
                )
                if warn:
                    continue  # warned about once it has stayed junk for a while
            if entry.warn:
                self._warn_skipped(entry)
        self._folders = folders

    def _compare(self, session_ids: list[str], reason: Reason = "poll") -> None:
        for session_id in session_ids:
            self._compare_one(self.source.location(session_id), reason)

    def _compare_one(self, location: Location, reason: Reason) -> None:
        try:
            files = self.source.adapter.fingerprint(location)
        except PostrunError:
            return  # unreadable metadata: the ingest reports it when the session changes
        if self.book.saw(location.session_id, fingerprint_key(files)) or self._opens_now(location.session_id):
            self.dispatcher.changed(location.session_id, reason)
            if self.watcher is not None:
                self.watcher.want(location.session_id)

    def _opens_now(self, session_id: str) -> bool:
        """True (and the session no longer taken as read) when a helper file its last read could
        not open can be opened now: a chmod, which no fingerprint shows."""
        unopened = self.book.unopened_files(session_id)
        if not any(os.access(path, os.R_OK) for path in unopened):
            return False
        self.book.unsee(session_id)
        return True

    def _warn_skipped(self, entry: Skipped) -> None:
        name = entry.path.name
        if name not in self._warned:
            self._warned.add(name)
            self.logger.warning(skipped_line(entry, self.kind))


def _racy(state: tuple[int, int, int] | None) -> bool:
    """True when the root changed less than a timestamp tick before now: a second change in
    the same tick would leave its mtime as it is, so the next poll lists it again (as git does)."""
    return state is not None and time.time_ns() - state[2] < _RACY_NS


def root_state(root: Path) -> tuple[int, int, int] | None:
    """The root's (device, inode, mtime_ns); None when it does not exist."""
    try:
        info = root.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns)
