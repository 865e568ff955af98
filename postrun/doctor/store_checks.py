"""The store's checks: it opens, is whole, private and at a known version, its disk has room; what ``exclude`` matches
in it; which stored sessions' files their agent has deleted.

The store is opened read-only, as every command that only reads opens it: checking changes
nothing (an older store is reported, not migrated; loose modes are reported, not tightened).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from postrun.doctor.check import Check
from postrun.errors import PostrunError, StoreTooNewError, StoreTooOldError
from postrun.review.exclude import Exclusions
from postrun.store import scrub
from postrun.store.db import STORE_VERSION, Database, StoreMissing
from postrun.store.forget import EXCLUDED, tombstones
from postrun.store.query import lead_files, session_workspaces
from postrun.text import size_text

# Below this much room capture cannot record (a transaction and its WAL pages need more); below
# the second, the next large session may not fit.
FULL_BYTES = 1024 * 1024
LOW_BYTES = 100 * 1024 * 1024


def check_store(db: Path) -> Check:
    """The store opens, passes SQLite's integrity check, is private and at a known version, and
    its disk has room: a full disk keeps capture from recording while the store reads fine."""
    return _with_disk_space(_check_store_file(db), db)


def _with_disk_space(check: Check, db: Path) -> Check:
    free = free_bytes(db.parent)
    if free is None or free >= LOW_BYTES or (check.level == "fail" and free >= FULL_BYTES):
        return check
    room = f"{size_text(free)} left for {db.parent}"
    hint = "free space on that disk: capture retries by itself and records again once there is room"
    if free < FULL_BYTES:
        # Also when the store did not open: with no room for its -shm file a reader gets "disk I/O
        # error", and the file itself is fine; the store check's own hint (move it aside) would be wrong.
        return Check("store", "fail", f"{check.detail}; its disk is full ({room}): capture cannot record", hint)
    return Check("store", "warn", f"{check.detail}; its disk is nearly full ({room})", hint)


def free_bytes(folder: Path) -> int | None:
    """Room left to an unprivileged user on the file system of ``folder`` (or of its nearest
    existing parent, for a store not created yet); None when it cannot be told."""
    for candidate in (folder, *folder.parents):
        try:
            found = os.statvfs(candidate)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None
        return found.f_bavail * found.f_frsize
    return None


def _check_store_file(db: Path) -> Check:
    try:
        modes = _modes(db)
    except FileNotFoundError:
        return Check(
            "store",
            "warn",
            f"no store yet at {db}",
            "it is created by the first capture (`postrun service install --now`) or `postrun ingest`",
        )
    except OSError as exc:
        return Check("store", "fail", f"{db}: cannot inspect ({exc.strerror or exc})", "check the path and its folder")
    try:
        with Database.open_reader(db) as database:
            problems = database.integrity_problems()
            version = database.user_version()
            unscrubbed = scrub.pending(database)
    except StoreTooNewError as exc:
        return Check("store", "fail", str(exc), "upgrade Postrun", configuration=True)
    except StoreTooOldError as exc:
        # Capture upgrades it when it starts: a warning, though reading commands refuse it until then.
        detail, _, hint = exc.reason.partition("; ")
        return Check("store", "warn", f"{exc.where}: {detail}", hint)
    except StoreMissing:
        return Check("store", "warn", f"no store yet at {db}", "it is created by the first capture")
    except PostrunError as exc:
        return Check("store", "fail", str(exc), f"check the file; move it aside to start a new store ({db})")
    if problems != ["ok"]:
        return Check(
            "store",
            "fail",
            f"{db}: integrity check failed: {problems[0]}",
            "stop capture, move the file aside and run `postrun capture --once` to rebuild it from Cline's files",
        )
    detail = f"{db} (schema version {version} of {STORE_VERSION}, integrity ok)"
    if unscrubbed:
        return Check(
            "store",
            "warn",
            f"{detail}; a forget's scrub is not finished: the file still holds bytes of the sessions it removed",
            "a running capture finishes it once no other process holds a read open; or run `postrun capture --once`",
        )
    loose = [f"{path} was {mode:04o}" for path, mode in modes if mode & 0o077]
    if loose:
        return Check(
            "store",
            "warn",
            f"{detail}; readable by others: {', '.join(loose)}",
            f"chmod 700 {db.parent} && chmod 600 {db} (capture tightens the files, not the folder)",
        )
    return Check("store", "ok", detail)


def check_exclude(exclusions: Exclusions, db: Path) -> Check:
    """The ``exclude`` patterns, and the stored sessions they match (stored before the pattern was
    added: they are kept until forgotten explicitly)."""
    if not exclusions.patterns:
        return Check("exclude", "ok", "nothing excluded (setting `exclude`)")
    shown = ", ".join(exclusions.patterns)
    try:
        with Database.open_reader(db) as database:
            stored = session_workspaces(database)
            removed = [tombstone.session_id for tombstone in tombstones(database, EXCLUDED)]
    except PostrunError:
        stored, removed = [], []
    if removed:
        # Stored before their workspace was known (a manifest that came after the transcript).
        listed = ", ".join(removed[:5]) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        shown += f"; {len(removed)} session(s) removed when their workspace turned out excluded: {listed}"
    matched = [(session_id, root) for session_id, root in stored if exclusions.matching(root) is not None]
    if matched:
        listed = ", ".join(f"{session_id} ({root})" for session_id, root in matched[:5])
        more = f" and {len(matched) - 5} more" if len(matched) > 5 else ""
        return Check(
            "exclude",
            "warn",
            f"excluded: {shown}; {len(matched)} stored session(s) were recorded before: {listed}{more}",
            f"they are kept as they are; `postrun forget {matched[0][0]}` removes one for good",
        )
    return Check("exclude", "ok", f"excluded: {shown}")


def check_sources(db: Path) -> Check:
    """How many stored sessions' files their agent has deleted since they were read (Claude Code
    cleans up after 30 days): kept in the store, and in the vault when raw copies are on."""
    try:
        with Database.open_reader(db) as database:
            leads = lead_files(database)
    except PostrunError:
        return Check("sources", "ok", "no store to check")
    found = {session_id: _source_state(path) for session_id, path in leads}
    removed = [session_id for session_id, state in found.items() if state == "removed"]
    if not removed:
        unchecked = sum(state == "unreachable" for state in found.values())
        if unchecked:
            # A folder it may not enter hides the files; it did not delete them.
            return Check(
                "sources",
                "ok",
                f"{unchecked} of {len(leads)} stored sessions' files could not be looked at (no permission); the others"
                " are where they were read",
            )
        return Check("sources", "ok", f"every stored session's files are where they were read ({len(leads)})")
    listed = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
    return Check(
        "sources",
        "ok",
        f"{len(removed)} of {len(leads)} stored sessions' files were deleted by their agent (kept here): {listed}",
        f"`postrun raw {removed[0]} --to DIR` gives a session's files back",
    )


def _source_state(path: str) -> str:
    """``present``, ``removed``, or ``unreachable`` (a folder on the way may not be entered:
    ``os.path.lexists`` would call that removed)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "removed"
    except OSError:
        return "unreachable"
    return "present"


def _modes(db: Path) -> list[tuple[Path, int]]:
    """The permission bits of the store's folder and file (which must exist)."""
    return [(path, stat.S_IMODE(path.stat().st_mode)) for path in (db.parent, db)]
