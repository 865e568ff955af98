"""A session mapped again from the vault's copies (``postrun reingest``), never from its files."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import apsw

from postrun.agents.registry import KeptSession, adapter, adapters
from postrun.errors import NotFound, PostrunError, StoreError
from postrun.ingest.prepare import map_files
from postrun.records import RawFile
from postrun.store import vault
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database, describe_sqlite_error
from postrun.store.write import stored_state

if TYPE_CHECKING:
    from postrun.ingest.ingester import Ingester, IngestOutcome


def no_raw_copies(session_id: str) -> NotFound:
    return NotFound(f"session {session_id}", "no raw copies kept (ingested while keep_raw was off?)")


def reingest_session(ingester: Ingester, session_id: str) -> IngestOutcome:
    """The session's records rebuilt from the newest copies the vault keeps, stored through the
    guarded write. The copies, the stored state and the write are one transaction: what is
    checked is what is written over.

    Raises NotFound when the vault keeps nothing of it, and PostrunError when its copies are
    older than its records (taken while ``keep_raw`` was off): reingesting those would roll
    the records back.
    """
    started = ingester.timer()
    database = ingester.database
    try:
        return _reingest(ingester, database, session_id, started)
    except apsw.Error as exc:
        raise StoreError(str(database.path), describe_sqlite_error(exc)) from None


def _reingest(ingester: Ingester, database: Database, session_id: str, started: float) -> IngestOutcome:
    with database.transaction():
        versions = vault.kept_versions(database, session_id)
        if not versions:
            raise no_raw_copies(session_id)
        copies = [
            RawFile(f.name, vault.read_blob(database, f.hash), f.fingerprint, f.settings) for f in versions[-1].files
        ]
        kept = _kept(database, session_id, copies)
        files = kept.files
        state = stored_state(database, session_id)
        if state is None:
            approvals = kept.approvals
        elif {(f.path, f.size, f.mtime_ns) for f in state.source_files} != {
            (f.path, f.size, f.mtime_ns) for f in files.source_files
        }:
            raise PostrunError(
                f"session {session_id}",
                "its raw copies are older than its records (keep_raw was off, or the session is"
                " open and its next copy not taken yet: see raw_copy_seconds)",
            )
        else:
            approvals = state.approvals
        prepared, _ = map_files(files, approvals, (), StoredHelpers(database, session_id), ingester.rules)
        prepared = dataclasses.replace(prepared, files=None)  # the vault holds these already
        return ingester.store(files.location, prepared, started, basis=state)


def _kept(database: Database, session_id: str, copies: list[RawFile]) -> KeptSession:
    """The copies parsed by the adapter of the stored session's agent, else by the first that
    knows them (the records are gone, the vault still keeps them)."""
    row = database.execute("SELECT agent FROM sessions WHERE id = ?", (session_id,)).fetchone()
    candidates = (adapter(str(row[0])),) if row is not None else adapters()
    for candidate in candidates:
        kept = candidate.kept(session_id, copies)
        if kept is not None:
            return kept
    raise NotFound(f"session {session_id}", "the raw copies hold no messages file")
