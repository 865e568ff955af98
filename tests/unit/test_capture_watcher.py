"""The watcher with a real watchdog observer on a temp dir: events become session hints."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from watchdog.observers.api import ObservedWatch
from watchdog.observers.inotify import InotifyObserver

from postrun.capture.watcher import SessionWatcher

WAIT = 5.0


class Hints:
    """Collects hints from the observer thread; waits are bounded conditions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.seen: list[str | None] = []

    def __call__(self, session_id: str | None) -> None:
        with self._changed:
            self.seen.append(session_id)
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[list[str | None]], bool], timeout: float = WAIT) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.seen), timeout)

    def clear(self) -> None:
        with self._lock:
            self.seen.clear()

    def snapshot(self) -> list[str | None]:
        with self._lock:
            return list(self.seen)


def root_armed(watcher: SessionWatcher) -> bool:
    """Whether the watcher's watch on the root is in place (from its state)."""
    return watcher._root_watch is not None and watcher._root_watch in watcher._alive_watches()


def identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "sessions"
    path.mkdir()
    return path


@pytest.fixture
def hints() -> Hints:
    return Hints()


@pytest.fixture
def make_watcher(root: Path, hints: Hints) -> Iterator[Callable[..., SessionWatcher]]:
    made: list[SessionWatcher] = []

    def make(**kwargs: Any) -> SessionWatcher:
        watcher = SessionWatcher(root, hints, logger=logging.getLogger("postrun.test"), **kwargs)
        made.append(watcher)
        return watcher

    yield make
    for watcher in made:
        watcher.stop()


def make_session(root: Path, session_id: str) -> Path:
    folder = root / session_id
    folder.mkdir()
    (folder / f"{session_id}.messages.json").write_text("[]")
    return folder


def quiet_for(hints: Hints, seconds: float = 0.3) -> list[str | None]:
    """What arrives during a short window (to show that something does *not* arrive,
    checked against an event that does arrive right after)."""
    hints.clear()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        hints.wait_for(lambda seen: False, timeout=deadline - time.monotonic())
    return hints.snapshot()


def test_new_session_folder_in_the_root_is_a_hint(root: Path, hints: Hints, make_watcher: Any) -> None:
    watcher = make_watcher()
    watcher.sync(identity(root))
    assert root_armed(watcher)
    make_session(root, "1790000000000_new")
    assert hints.wait_for(lambda seen: "1790000000000_new" in seen)


def test_changes_in_a_wanted_folder_rewrite_and_rename(root: Path, hints: Hints, make_watcher: Any) -> None:
    folder = make_session(root, "s1")
    watcher = make_watcher()
    watcher.want("s1")
    watcher.sync(identity(root))
    assert watcher.watched_folders == {"s1"}
    # Rewritten in place (truncate, then write), as Cline does.
    (folder / "s1.messages.json").write_text('[{"role": "user"}]')
    assert hints.wait_for(lambda seen: "s1" in seen)
    # Replaced by rename: only the temp file's events precede the rename, and they are ignored.
    hints.clear()
    temp = folder / "s1.json.123.tmp"
    temp.write_text("{}")
    os.replace(temp, folder / "s1.json")
    assert hints.wait_for(lambda seen: "s1" in seen)


def test_temp_files_hidden_and_unsafe_names_are_not_hints(root: Path, hints: Hints, make_watcher: Any) -> None:
    watcher = make_watcher()
    watcher.sync(identity(root))
    (root / "sessions.index.json.tmp").write_text("{}")
    (root / ".hidden").mkdir()
    (root / "_queue").mkdir()
    (root / "bad name").mkdir()
    (root / "machine-id").write_text("x")
    make_session(root, "marker")  # arrives after the others: proves they were processed
    assert hints.wait_for(lambda seen: "marker" in seen)
    assert set(hints.snapshot()) <= {"marker", None}


def test_reading_a_file_is_not_a_change(root: Path, hints: Hints, make_watcher: Any) -> None:
    folder = make_session(root, "s1")
    watcher = make_watcher()
    watcher.want("s1")
    watcher.sync(identity(root))
    for _ in range(3):
        (folder / "s1.messages.json").read_bytes()  # what every ingest does
    assert quiet_for(hints) == []
    (folder / "s1.messages.json").write_text("[1]")
    assert hints.wait_for(lambda seen: "s1" in seen)


def test_unwatched_folders_give_no_events_and_the_cap_holds(root: Path, hints: Hints, make_watcher: Any) -> None:
    folders = {name: make_session(root, name) for name in ("a", "b", "c")}
    watcher = make_watcher(max_folders=2)
    for name in ("a", "b", "c"):
        watcher.want(name)  # "a" is the least recently active: dropped by the cap
    watcher.sync(identity(root))
    assert watcher.watched_folders == {"b", "c"}
    (folders["a"] / "a.messages.json").write_text("[1]")
    (folders["c"] / "c.messages.json").write_text("[1]")
    assert hints.wait_for(lambda seen: "c" in seen)
    assert "a" not in hints.snapshot()
    watcher.want("a")  # active again: it takes the place of "b"
    watcher.sync(identity(root))
    assert watcher.watched_folders == {"a", "c"}


def test_root_deleted_then_recreated_is_watched_again(root: Path, hints: Hints, make_watcher: Any) -> None:
    make_session(root, "old")
    watcher = make_watcher()
    watcher.want("old")
    watcher.sync(identity(root))
    shutil.rmtree(root)
    assert hints.wait_for(lambda seen: None in seen)  # the root itself changed
    deadline = time.monotonic() + WAIT
    while root_armed(watcher) and time.monotonic() < deadline:
        time.sleep(0.01)  # the emitter thread ends by itself after IN_DELETE_SELF
    assert not root_armed(watcher)
    watcher.sync(identity(root))  # what the next poll does: nothing to watch yet
    assert watcher.watched_folders == frozenset()
    root.mkdir()
    watcher.sync(identity(root))
    assert root_armed(watcher)
    make_session(root, "fresh")
    assert hints.wait_for(lambda seen: "fresh" in seen)


def test_root_missing_at_start_is_picked_up_later(root: Path, hints: Hints, make_watcher: Any) -> None:
    root.rmdir()
    watcher = make_watcher()
    watcher.sync(identity(root))
    assert not root_armed(watcher)
    root.mkdir()
    watcher.sync(identity(root))
    assert root_armed(watcher)
    make_session(root, "late")
    assert hints.wait_for(lambda seen: "late" in seen)


def test_root_replaced_by_another_folder_is_rearmed(root: Path, hints: Hints, make_watcher: Any) -> None:
    watcher = make_watcher()
    watcher.sync(identity(root))
    root.rename(root.with_name("sessions.old"))
    root.mkdir()
    watcher.sync(identity(root))  # same path, new inode
    make_session(root, "in_new_root")
    assert hints.wait_for(lambda seen: "in_new_root" in seen)


class _WatchLimitObserver(InotifyObserver):
    """A real observer whose kernel refuses watches beyond the first (as with ENOSPC)."""

    def schedule(self, *args: Any, **kwargs: Any) -> ObservedWatch:
        if self._watches:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return super().schedule(*args, **kwargs)


def test_watch_limit_is_logged_once_and_the_root_still_works(
    root: Path, hints: Hints, make_watcher: Any, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("a", "b"):
        make_session(root, name)
    watcher = make_watcher(observer_factory=_WatchLimitObserver)
    watcher.want("a")
    watcher.want("b")
    with caplog.at_level(logging.WARNING, logger="postrun"):
        watcher.sync(identity(root))
        watcher.sync(identity(root))
    limit_lines = [r.getMessage() for r in caplog.records if "cannot watch more folders" in r.getMessage()]
    assert limit_lines == [
        "cline: cannot watch more folders: the inotify watch limit is reached (fs.inotify.max_user_watches);"
        " polling covers the rest"
    ]
    assert root_armed(watcher)
    assert watcher.watched_folders == frozenset()
    make_session(root, "c")
    assert hints.wait_for(lambda seen: "c" in seen)
