"""``postrun mirror status`` and ``postrun mirror push``, and the doctor's mirror check.

``status`` never writes to PostgreSQL (it reads the schema's version); ``push`` drains the
outbox once, holding the store's push lock, so it refuses while capture is pushing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from postrun.mirror.bounded import bounded
from postrun.mirror.pgerrors import Refusal, describe_pg_error, refusal
from postrun.mirror.push import MirrorError, Pushed, Pusher, connect, local_origin, push_lock
from postrun.mirror.reconcile import Drift, Mirrored, drift, mirrored
from postrun.mirror.rows import redaction_of
from postrun.mirror.schema import REDACTED_SINCE, SCHEMA_VERSION
from postrun.mirror.target import MirrorTarget
from postrun.store import outbox
from postrun.store.db import Database, StoreMissing

# How ``mirror status`` and ``doctor`` name what the server did.
SERVER_STATES: dict[Refusal, str] = {
    "unreachable": "unreachable",
    "login": "refused the login",
    "permission": "refused a permission",
    "answered": "answered with an error",
}


@dataclass(frozen=True, slots=True)
class Reach:
    """Whether the server answers, and at which schema version (0: not created yet)."""

    state: str  # "reachable", or one of SERVER_STATES' values
    detail: str  # "schema postrun version 1" or why not
    version: int | None = None

    @property
    def ok(self) -> bool:
        return self.state == "reachable"


@dataclass(frozen=True, slots=True)
class MirrorStatus:
    target: MirrorTarget
    reach: Reach
    waiting: int
    waiting_since: str | None
    last_push: str | None
    machine_id: str | None  # None: no store yet
    redact: bool  # mirror_redact
    drift: Drift | None = None  # None: not compared (no store, or the server did not answer)

    @property
    def shown_url(self) -> str:  # with the user-info and secret options masked
        return self.target.shown_url

    @property
    def too_new(self) -> bool:
        return self.reach.version is not None and self.reach.version > SCHEMA_VERSION

    @property
    def caught_up(self) -> bool:
        drifted = self.drift is not None and self.drift.sessions > 0
        return self.reach.ok and not self.too_new and self.waiting == 0 and not drifted


def reach(target: MirrorTarget, machine_id: str | None = None) -> tuple[Reach, dict[str, Mirrored] | None]:
    """What the server says, and what it holds of ``machine_id``'s sessions (None: not read).
    Reads only. Raises ConfigError for options libpq refuses (a typo is not an outage)."""
    try:
        connection = connect(target)
    except MirrorError as exc:
        return Reach(SERVER_STATES[exc.refusal], exc.reason), None
    held = None
    try:
        with connection, bounded(connection):
            exists = connection.execute("SELECT to_regclass('postrun.schema_version') IS NOT NULL").fetchone()
            row = (
                connection.execute("SELECT max(version) FROM postrun.schema_version").fetchone()
                if exists is not None and exists[0]
                else None
            )
            version = int(row[0] or 0) if row is not None else 0
            if machine_id is not None and 0 < version <= SCHEMA_VERSION:
                held = mirrored(connection, machine_id, redaction=version >= REDACTED_SINCE)
    except psycopg.Error as exc:
        return Reach(SERVER_STATES[refusal(exc)], describe_pg_error(exc)), None
    if version == 0:
        return Reach("reachable", "schema postrun not created yet (the first push creates it)", 0), {}
    if version > SCHEMA_VERSION:
        detail = f"schema postrun version {version}, newer than this Postrun knows ({SCHEMA_VERSION})"
        return Reach("reachable", detail, version), None
    if version < SCHEMA_VERSION:
        return Reach("reachable", f"schema postrun version {version} (the next push migrates it)", version), held
    return Reach("reachable", f"schema postrun version {version}", version), held


def mirror_status(target: MirrorTarget, db: Path, *, redact: bool = True) -> MirrorStatus:
    try:
        with Database.open_reader(db) as database:  # status reads: the store is left as it is
            backlog = outbox.backlog(database)
            last_push = outbox.state(database, "last_push")
            machine = outbox.machine_id(database)
            stored = outbox.held(database)
    except StoreMissing:
        return MirrorStatus(target, reach(target)[0], 0, None, None, None, redact)
    found, held = reach(target, machine)
    drifted = None if held is None else drift(stored, held, redaction_of(redact))
    return MirrorStatus(target, found, backlog.sessions, backlog.oldest, last_push, machine, redact, drifted)


@dataclass(frozen=True, slots=True)
class PushReport:
    target: MirrorTarget
    pushed: Pushed
    waiting: int
    seconds: float
    drift: Drift | None = None  # what the mirror lacked or held otherwise, sent again


def push_once(
    target: MirrorTarget,
    db: Path,
    lock: Path,
    *,
    redact: bool = True,
    everything: bool = False,
    on_start: Callable[[int], None] = lambda total: None,
    on_batch: Callable[[Pushed], None] = lambda pushed: None,
) -> PushReport:
    """Drain the outbox once (``everything``: every stored session deleted from the mirror and
    sent again whole first). ``on_start`` hears how many sessions wait (after connecting: a
    first push to a database queues the whole store, and what the mirror lacks is queued).
    Raises AlreadyRunning (75) while another push of this store runs, MirrorError when the
    server cannot be used, MirrorSchemaTooNew."""
    started = time.monotonic()
    # The store first: without one (a runner that recorded nothing) the push says so in one
    # line, and leaves no lock file in a folder that may not even exist.
    with Database.open(db, create=False) as database, push_lock(lock):
        pusher = Pusher(target, database, local_origin(database), redact=redact)
        try:
            pusher.connected()
            if everything:
                pusher.resend_everything()
            on_start(outbox.backlog(database).sessions)
            pushed = pusher.drain(on_batch=on_batch)
        finally:
            pusher.disconnect()
        waiting = outbox.backlog(database).sessions
    drifted = pusher.drifted if pusher.drifted is not None and pusher.drifted.sessions else None
    return PushReport(target, pushed, waiting, time.monotonic() - started, drifted)
