"""Writing a mapped session into the store: one transaction, an upsert by content digest.

Only records whose digest changed are written. The earlier version of a v1.2 record
(the session, a segment, actor, turn or step) that changed or disappeared from the
source is moved to ``history`` first, so no version of a record the store held is lost.
The store's own columns next to them (model, provider, Cline's title and status, git
branch, the files' fingerprints) keep only their latest value; the approval snapshot
keeps its first. A session whose files disappear is never deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

import orjson

from postrun.prefix import same_prefix
from postrun.records import MappedSession, RawCopy, SourceFile, StepRow, canonical_json, digest
from postrun.store import outbox, vault
from postrun.store.actors import write_actor_metrics
from postrun.store.codec import pack, search_body, unpack
from postrun.store.db import Database
from postrun.store.flags import insert_step_flags, remove_step_flags, step_flag_rows, write_step_flags
from postrun.timestamps import normalize_timestamp, utc_iso

IngestStatus = Literal["ingested", "updated", "unchanged"]


@dataclass(frozen=True, slots=True)
class UpsertResult:
    session_id: str
    status: IngestStatus
    steps: int
    turns: int
    segments: int
    rows_written: int
    open: bool  # the stored session has no end time yet


@dataclass(frozen=True, slots=True)
class StoredState:
    """What a later ingest of a session needs from its earlier one."""

    approvals: dict[str, Any]
    source_files: tuple[SourceFile, ...]


def stored_state(database: Database, session_id: str) -> StoredState | None:
    row = database.execute("SELECT approvals, source_files FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    return StoredState(approvals=orjson.loads(row[0]), source_files=decode_source_files(row[1]))


def decode_source_files(text: str | bytes) -> tuple[SourceFile, ...]:
    return tuple(SourceFile(**item) for item in orjson.loads(text))


def _encode_source_files(files: Iterable[SourceFile]) -> str:
    return orjson.dumps(
        [{"path": f.path, "size": f.size, "mtime_ns": f.mtime_ns, "ino": f.ino} for f in files]
    ).decode()


@dataclass(slots=True)
class StoredTurns:
    """What the store holds of a session's turns as a write left them: turn id -> (the turn
    record as given, the digest stored). Not ``filled`` until a write read them back."""

    by_key: dict[Any, tuple[Mapping[str, Any], str]] = field(default_factory=dict)
    filled: bool = False


class _Writer:
    def __init__(self, database: Database, session_id: str, now: str, *, new: bool) -> None:
        """``new``: the session has no row yet."""
        self.database = database
        self.connection = database.connection
        self.session_id = session_id
        self.now = now
        self.new = new
        self.rows = 0

    def stored_digests(self, table: str, key_column: str) -> dict[Any, str]:
        """What ``table`` holds of the session, key -> digest. A session without its row holds no
        segments, actors, turns or steps (their foreign keys, enforced): nothing is read back."""
        if self.new:
            return {}
        return dict(
            self.connection.execute(
                f"SELECT {key_column}, digest FROM {table} WHERE session_id = ?", (self.session_id,)
            )
        )

    def keep_history(self, kind: str, record_id: str, record: str, record_digest: str, reason: str) -> None:
        self.connection.execute(
            "INSERT INTO history (session_id, kind, record_id, record, digest, reason, replaced_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.session_id, kind, record_id, record, record_digest, reason, self.now),
        )
        self.rows += 1

    def sync_steps(
        self,
        rows: Sequence[StepRow | StepWrite],
        known: dict[str, str] | None = None,
        written: Sequence[StepRow | StepWrite] = (),
    ) -> None:
        """Write the steps whose digests changed; ``known`` (what the store holds, id -> digest)
        is compared against instead of read back, and left as what the store holds after.
        ``written``: the rows whose write left ``known`` as it is; those of them ``rows`` begins
        with, the very same, are unchanged, and not compared one by one."""
        execute = self.connection.execute
        # Only ids and digests: a re-ingest after one new message compares thousands of
        # unchanged steps, and looks up the rowid of the few that changed.
        stored: dict[str, str] = known if known is not None else self.stored_digests("steps", "id")
        before = len(stored)
        start = same_prefix(rows, written) if known is not None else 0
        kept = start  # rows whose id the store held (the ids are unique: the session was validated)
        added: list[StepWrite] = []
        for row in rows[start:]:
            previous = stored.get(row.id)
            if previous is not None:
                kept += 1
            if previous == row.digest:
                continue
            stored[row.id] = row.digest
            write = row if isinstance(row, StepWrite) else step_write(row)
            if previous is None:
                added.append(write)
                continue
            self.database.run_deferred()  # the index must hold what it is about to unindex
            rowid = self._rowid(row.id)
            self._step_to_history(rowid, "changed")
            # The index's text comes from the steps row: unindex the old text before it changes.
            execute("DELETE FROM step_search WHERE rowid = ?", (rowid,))
            execute(
                "UPDATE steps SET seq = ?, turn_id = ?, type = ?, outcome = ?, content_status = ?,"
                " at = ?, record = ?, digest = ? WHERE rowid = ?",
                (*write.columns, write.digest, rowid),
            )
            execute("INSERT INTO step_search (rowid, body) VALUES (?, ?)", (rowid, write.body))
            write_step_flags(self.connection, self.session_id, row.id, write.flags, replace=True)
            self.rows += 1
        if added:
            self._insert_steps(added)
        if kept == before:  # every stored step is still in the session: none to remove
            return
        ids = {row.id for row in rows}
        removed = [step_id for step_id in stored if step_id not in ids]
        self.database.run_deferred()
        # In the order the digest index reads them (by id), known or read back.
        for step_id in sorted(removed) if known is not None else removed:
            del stored[step_id]
            rowid = self._rowid(step_id)
            self._step_to_history(rowid, "removed")
            execute("DELETE FROM step_search WHERE rowid = ?", (rowid,))
            execute("DELETE FROM steps WHERE rowid = ?", (rowid,))
            remove_step_flags(self.connection, self.session_id, step_id)
            self.rows += 1

    def _insert_steps(self, added: list[StepWrite]) -> None:
        """New steps in one ``executemany``, their index entries at the commit, and their flags.

        The rowids are chosen here, as SQLite would (after the largest): this transaction
        holds the write lock, so no other writer can take them.
        """
        first = int(self.connection.execute("SELECT coalesce(max(rowid), 0) + 1 FROM steps").get)
        session_id = self.session_id
        self.connection.executemany(
            "INSERT INTO steps (rowid, session_id, id, seq, turn_id, type, outcome, content_status, at, record, digest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(first + i, session_id, row.id, *row.columns, row.digest) for i, row in enumerate(added)],
        )
        self.database.at_commit(
            "INSERT INTO step_search (rowid, body) VALUES (?, ?)",
            [(first + i, row.body) for i, row in enumerate(added)],
        )
        insert_step_flags(
            self.connection,
            [flag for row in added if row.flags for flag in step_flag_rows(session_id, row.id, row.flags)],
        )
        self.rows += len(added)

    def _rowid(self, step_id: str) -> int:
        return int(
            self.connection.execute(
                "SELECT rowid FROM steps WHERE session_id = ? AND id = ?", (self.session_id, step_id)
            ).get
        )

    def _step_to_history(self, rowid: int, reason: str) -> None:
        for step_id, record, record_digest in self.connection.execute(
            "SELECT id, record, digest FROM steps WHERE rowid = ?", (rowid,)
        ):
            self.keep_history("step", step_id, unpack(record).decode(), record_digest, reason)

    def sync_keyed(
        self,
        table: str,
        kind: str,
        key_column: str,
        records: Sequence[tuple[Any, Mapping[str, Any]]],
        *,
        omit: str | None = None,
        known: StoredTurns | None = None,
    ) -> None:
        """Upsert small records (segments, actors, turns) keyed by ``key_column``; each record
        is stored without its ``omit`` field. ``known``: what the store holds of them as the
        last write left it, compared against by identity (a record given again as the very
        same object is unchanged) and left as the store holds them after; when not ``filled``
        yet, read back and filled."""
        if self.new:
            self._insert_keyed(table, key_column, records, omit, known)
            return
        execute = self.connection.execute
        given = known.by_key if known is not None and known.filled else None
        # Only keys and digests: a live re-ingest finds nearly every record unchanged, and
        # reads back the earlier version of the few that changed, for ``history``.
        stored: dict[Any, str] = (
            {key: stored_digest for key, (_, stored_digest) in given.items()}
            if given is not None
            else self.stored_digests(table, key_column)
        )
        left: dict[Any, tuple[Mapping[str, Any], str]] = {}
        extra_column = ", idx" if table == "turns" else ""
        for key, record in records:
            last = given.get(key) if given is not None else None
            if last is not None and last[0] is record:
                del stored[key]
                left[key] = last
                continue
            blob = canonical_json({k: v for k, v in record.items() if k != omit} if omit else record)
            record_digest = digest(blob)
            left[key] = (record, record_digest)
            previous = stored.pop(key, None)
            if previous == record_digest:
                continue
            if previous is not None:
                self._keyed_to_history(table, kind, key_column, key, previous, "changed")
            extra_value = (record["index"],) if table == "turns" else ()
            execute(
                f"INSERT INTO {table} (session_id, {key_column}, record, digest{extra_column})"
                f" VALUES (?, ?, ?, ?{', ?' if extra_value else ''})"
                f" ON CONFLICT DO UPDATE SET record = excluded.record, digest = excluded.digest"
                f"{', idx = excluded.idx' if extra_value else ''}",
                (self.session_id, key, blob.decode(), record_digest, *extra_value),
            )
            self.rows += 1
        for key, stored_digest in stored.items():
            self._keyed_to_history(table, kind, key_column, key, stored_digest, "removed")
            execute(f"DELETE FROM {table} WHERE session_id = ? AND {key_column} = ?", (self.session_id, key))
            self.rows += 1
        if known is not None:
            known.by_key = left
            known.filled = True

    def _insert_keyed(
        self,
        table: str,
        key_column: str,
        records: Sequence[tuple[Any, Mapping[str, Any]]],
        omit: str | None,
        known: StoredTurns | None,
    ) -> None:
        """``sync_keyed`` for a session the store holds nothing of: every record is new, written
        in one statement (a cold ingest writes thousands of such sessions)."""
        left: dict[Any, tuple[Mapping[str, Any], str]] = {}
        rows: list[tuple[Any, ...]] = []
        turns = table == "turns"
        for key, record in records:
            blob = canonical_json({k: v for k, v in record.items() if k != omit} if omit else record)
            record_digest = digest(blob)
            left[key] = (record, record_digest)
            rows.append((self.session_id, key, blob.decode(), record_digest, *((record["index"],) if turns else ())))
        if rows:
            self.connection.executemany(
                f"INSERT INTO {table} (session_id, {key_column}, record, digest{', idx' if turns else ''})"
                f" VALUES (?, ?, ?, ?{', ?' if turns else ''})",
                rows,
            )
        self.rows += len(rows)
        if known is not None:
            known.by_key = left
            known.filled = True

    def _keyed_to_history(
        self, table: str, kind: str, key_column: str, key: Any, stored_digest: str, reason: str
    ) -> None:
        record = self.connection.execute(
            f"SELECT record FROM {table} WHERE session_id = ? AND {key_column} = ?", (self.session_id, key)
        ).get
        self.keep_history(kind, str(key), str(record), stored_digest, reason)


class StepWrite(NamedTuple):
    """What the store writes of a new or changed step (``step_write``). A batched ingest's ingest
    processes compute it, so the writer only writes, and a tuple of plain values is what
    crosses to it cheaply."""

    id: str
    digest: str
    columns: tuple[Any, ...]  # seq, turn_id, type, outcome, content_status, at, the packed record
    body: str  # the search index's text
    flags: list[dict[str, Any]]


def step_write(row: StepRow) -> StepWrite:
    record = row.record
    columns = (
        record["seq"],
        record["turn_id"],
        record["type"],
        record["outcome"],
        record["content_status"],
        normalize_timestamp(record["at"]),
        pack(row.blob),
    )
    return StepWrite(row.id, row.digest, columns, search_body(record), record["flags"])


def upsert_session(
    database: Database,
    mapped: MappedSession,
    *,
    now: datetime,
    captured_on: str,
    raw: Sequence[RawCopy] = (),
    steps: Sequence[StepWrite] | None = None,
    known: dict[str, str] | None = None,
    written: Sequence[StepRow | StepWrite] = (),
    turns: StoredTurns | None = None,
) -> UpsertResult:
    """Store ``mapped`` in one transaction, writing only what changed.

    The caller validates ``mapped`` first. The approval snapshot of the first
    ingest is kept: later ingests never replace it. ``raw``, the files ``mapped`` was
    mapped from, go to the vault in the same transaction. ``steps``, when given, are
    ``mapped``'s steps as ``step_write`` made them (and ``mapped.steps`` is not read).
    ``known``, when given, is what the store holds of the session's steps (id -> digest,
    ``postrun.ingest.known``): it is compared against, not read back, and updated to what the
    store holds after the write (only if it commits); ``written``, the rows that left it so.
    ``turns``, likewise, what it holds of the session's turns (``StoredTurns``).
    """
    rows: Sequence[StepRow | StepWrite] = mapped.steps if steps is None else steps
    session = mapped.session
    session_id = mapped.id
    session_blob = canonical_json(session)
    session_digest = digest(session_blob)
    extras = mapped.extras
    columns = (
        mapped.agent,
        session_blob.decode(),
        session_digest,
        normalize_timestamp(session["started_at"]),
        normalize_timestamp(session["ended_at"]) if "ended_at" in session else None,
        extras.model,
        extras.provider,
        extras.agent_title,
        extras.agent_status,
        extras.git_branch,
    )
    source_files = _encode_source_files(mapped.source_files)
    stamp = utc_iso(now)
    with database.transaction() as connection:
        existing = connection.execute(
            "SELECT agent, record, digest, started_at, ended_at, model, provider, cline_title, cline_status,"
            " git_branch, source_files FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
        stored_source_files = existing[-1] if existing is not None else None
        existing = existing[:-1] if existing is not None else None
        writer = _Writer(database, session_id, stamp, new=existing is None)
        if existing is None:
            connection.execute(
                "INSERT INTO sessions (agent, record, digest, started_at, ended_at, model, provider, cline_title,"
                " cline_status, git_branch, id, approvals, source_files, captured_on, ingested_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *columns,
                    session_id,
                    orjson.dumps(mapped.approvals).decode(),
                    source_files,
                    captured_on,
                    stamp,
                    stamp,
                ),
            )
            writer.rows += 1
        writer.sync_keyed("segments", "segment", "idx", [(s["index"], s) for s in mapped.segments])
        writer.sync_keyed("actors", "actor", "id", [(a["id"], a) for a in mapped.actors])
        write_actor_metrics(
            connection,
            session_id,
            {a["id"]: mapped.helper_metrics.get(a["id"]) for a in mapped.actors},
            fresh=existing is None,
        )
        writer.sync_keyed("turns", "turn", "id", [(t["id"], t) for t in mapped.turns], omit="step_ids", known=turns)
        writer.sync_steps(rows, known, written)
        if raw:
            (vault.keep_first if existing is None else vault.keep)(connection, session_id, raw, now=stamp)
        session_changed = existing is not None and tuple(existing) != columns
        if existing is not None and existing[2] != session_digest:
            # Metrics and the end time change as a session goes on: each earlier version is kept.
            writer.keep_history("session", session_id, existing[1], existing[2], "changed")
        if existing is not None and (session_changed or writer.rows):
            connection.execute(
                "UPDATE sessions SET agent = ?, record = ?, digest = ?, started_at = ?, ended_at = ?, model = ?,"
                " provider = ?, cline_title = ?, cline_status = ?, git_branch = ?, source_files = ?,"
                " updated_at = ? WHERE id = ?",
                (*columns, source_files, stamp, session_id),
            )
            writer.rows += 1
        elif existing is not None and stored_source_files != source_files:
            # Same content, new fingerprints (a file was touched): remember them so the
            # next start-up can skip this session without reading it.
            connection.execute("UPDATE sessions SET source_files = ? WHERE id = ?", (source_files, session_id))
        if existing is None or writer.rows:
            outbox.enqueue(connection, session_id, stamp)
    if existing is None:
        status: IngestStatus = "ingested"
    elif writer.rows:
        status = "updated"
    else:
        status = "unchanged"
    return UpsertResult(
        session_id=session_id,
        status=status,
        steps=len(rows),
        turns=len(mapped.turns),
        segments=len(mapped.segments),
        rows_written=writer.rows,
        open="ended_at" not in session,
    )
