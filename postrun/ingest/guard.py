"""What decides whether a session may be written, checked inside the transaction that writes it.

A session is read and mapped outside any transaction (that takes long, and the write lock
must not be held meanwhile); everything the store says about whether and what to write is
read again here, inside ``Ingester.store``'s transaction, so a forget, an exclude or another
writer that committed in between wins:

- the tombstone: a forgotten session is never written back (unless ``ingest --force``);
- the stored state the mapping was made against (its approval snapshot, its files'
  fingerprints): when another writer stored the session since, it is read and mapped again
  here, so what is written is never older than what the store holds and its steps' decisions
  follow the snapshot the store kept;
- the exclude, on the workspace root the records name;
- the vault's last copy (whether a live ingest copies now) and the copies of files that could
  not be read this time, read in ``Ingester._write`` within the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from postrun.agents.registry import Location
from postrun.errors import Forgotten
from postrun.ingest.prepare import Prepared, prepare, read_admitted, refuse_excluded, workspace_of
from postrun.records import RawFile
from postrun.store import vault
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database
from postrun.store.forget import EXCLUDED, FORGOTTEN, tombstone_kind
from postrun.store.write import StoredState, stored_state

if TYPE_CHECKING:
    from postrun.ingest.ingester import Ingester


@dataclass(frozen=True, slots=True)
class Guarded:
    """What may be written: the session as prepared (again, if it had to be), what the store
    holds of it now, and whether it is forgotten (then ``force`` writes it and lifts that)."""

    prepared: Prepared
    state: StoredState | None
    forgotten: bool


def guarded(
    ingester: Ingester, location: Location, prepared: Prepared, basis: StoredState | None, *, force: bool
) -> Guarded:
    """The checks, in the caller's write transaction; raises Forgotten or Excluded to refuse."""
    database = ingester.database
    session_id = location.session_id
    kind = tombstone_kind(database, session_id)
    forgotten = kind is not None
    if kind is not None and not force:
        raise forgotten_refusal(session_id, kind)
    state = stored_state(database, session_id)
    if state != basis or (state is not None and prepared.mapped.approvals != state.approvals):
        files = read_admitted(location, ingester.rules)
        approvals = None if state is None else state.approvals
        prepared, cache = prepare(files, approvals, StoredHelpers(database, session_id), ingester.rules)
        prepared = replace(prepared, cache=cache)
        ingester.fresh_caches[session_id] = cache
    refuse_excluded(session_id, workspace_of(prepared.mapped), ingester.rules)
    return Guarded(prepared, state, forgotten)


def vault_copies(database: Database, session_id: str, paths: Iterable[str]) -> list[RawFile]:
    """The vault's newest copies of files that could not be read this time: they stay the
    newest, as the records mapped from them stay stored."""
    wanted = set(paths)
    versions = vault.kept_versions(database, session_id)
    kept = [f for f in versions[-1].files if f.fingerprint.path in wanted] if versions else []
    return [RawFile(f.name, vault.read_blob(database, f.hash), f.fingerprint, f.settings) for f in kept]


def forgotten_refusal(session_id: str, kind: str = FORGOTTEN) -> Forgotten:
    why = "removed when its workspace turned out excluded" if kind == EXCLUDED else "forgotten (postrun forget)"
    return Forgotten(session_id, f"{why}; `postrun ingest --force` brings it back")
