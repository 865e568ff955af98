"""Reading the store: session lists, whole sessions and their history (search: ``store.search``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from postrun.errors import NotFound, PostrunError, UsageError
from postrun.schema import SCHEMA_VERSION
from postrun.store import codec
from postrun.store.db import MAX_INTEGER, Database
from postrun.store.titles import TITLE_SQL
from postrun.text import is_utf8


def no_session(reference: str, db: Path) -> NotFound:
    return NotFound("", f"no session {reference} in {db}")


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    agent: str
    started_at: str  # as the v1.2 record has it
    started_utc: str  # the same instant in UTC, for display and ordering
    ended_at: str | None
    steps: int
    failed_steps: int
    flagged_steps: int
    title: str
    model: str | None
    provider: str | None
    workspace: str
    status: str | None
    git_branch: str | None
    captured_on: str
    ingested_at: str
    updated_at: str

    @property
    def open(self) -> bool:
        return self.ended_at is None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "agent": self.agent,
            "started_at": self.started_at,
            "open": self.open,
            "steps": self.steps,
            "failed_steps": self.failed_steps,
            "flagged_steps": self.flagged_steps,
            "title": self.title,
            "model": self.model,
            "provider": self.provider,
            "workspace": self.workspace,
            "status": self.status,
            "git_branch": self.git_branch,
            "captured_on": self.captured_on,
            "ingested_at": self.ingested_at,
            "updated_at": self.updated_at,
        }
        if self.ended_at is not None:  # absent while the session is open, as in v1.2
            data["ended_at"] = self.ended_at
        return data


def list_sessions(
    database: Database,
    *,
    agent: str | None = None,
    limit: int | None = None,
    flagged: bool = False,
    workspace: str | None = None,
    since_utc: str | None = None,
) -> list[SessionSummary]:
    """Sessions newest first (by start time); ``flagged``: only those with a flagged step;
    ``workspace``: only that workspace root's; ``since_utc``: only those started then or later."""
    sql = f"""
        SELECT s.id, s.agent, s.record, s.started_at, s.model, s.provider, s.cline_status, s.git_branch,
               s.captured_on, s.ingested_at, s.updated_at,
               (SELECT count(*) FROM steps st WHERE st.session_id = s.id),
               (SELECT count(*) FROM steps st WHERE st.session_id = s.id AND st.outcome = 'failed'),
               (SELECT count(DISTINCT f.step_id) FROM step_flags f WHERE f.session_id = s.id),
               {TITLE_SQL}
          FROM sessions s
         WHERE (?1 IS NULL OR s.agent = ?1)
           AND (?3 = 0 OR EXISTS (SELECT 1 FROM step_flags f WHERE f.session_id = s.id))
           AND (?4 IS NULL OR json_extract(s.record, '$.workspace.root') = ?4)
           AND (?5 IS NULL OR s.started_at >= ?5)
         ORDER BY s.started_at DESC, s.id
         LIMIT ?2
    """
    summaries = []
    most = -1 if limit is None else min(limit, MAX_INTEGER)
    for row in database.execute(sql, (agent, most, int(flagged), workspace, since_utc)):
        (session_id, kind, record_text, started_utc, model, provider, status, branch, captured_on, ingested_at,
         updated_at, steps, failed, flagged_steps, title) = row  # fmt: skip
        record = orjson.loads(record_text)
        summaries.append(
            SessionSummary(
                id=session_id,
                agent=kind,
                started_at=record["started_at"],
                started_utc=started_utc,
                ended_at=record.get("ended_at"),
                steps=steps,
                failed_steps=failed,
                flagged_steps=flagged_steps,
                title=title,
                model=model,
                provider=provider,
                workspace=record["workspace"]["root"],
                status=status,
                git_branch=branch,
                captured_on=captured_on,
                ingested_at=ingested_at,
                updated_at=updated_at,
            )
        )
    return summaries


def lead_files(database: Database) -> list[tuple[str, str]]:
    """(id, the file each stored session was last read from that makes or breaks it)."""
    return [
        (str(session_id), str(path))
        for session_id, path in database.execute(
            "SELECT id, json_extract(source_files, '$[0].path') FROM sessions ORDER BY started_at, id"
        )
        if path is not None
    ]


def session_workspaces(database: Database) -> list[tuple[str, str]]:
    """(id, workspace root) of every stored session, oldest first."""
    return [
        (str(session_id), str(root or ""))
        for session_id, root in database.execute(
            "SELECT id, json_extract(record, '$.workspace.root') FROM sessions ORDER BY started_at, id"
        )
    ]


class AmbiguousSession(PostrunError):
    """An id prefix that more than one stored session starts with."""

    def __init__(self, reference: str, candidates: list[str], more: bool) -> None:
        shown = ", ".join(candidates) + (", …" if more else "")
        super().__init__("", f"session prefix {reference!r} is ambiguous: {shown}")
        self.reference = reference
        self.candidates = candidates  # the first few, by id
        self.more = more  # more sessions start with it than those


_CANDIDATES = 10


def resolve_session_id(database: Database, reference: str) -> str:
    """The full id for ``reference``: an exact id or a unique prefix of one. Whitespace around it
    (an id pasted with a space or a line end) is not part of it, unless a stored id has it."""
    if not reference.strip():
        # The prefix of every id: with one session stored it named that one, so `forget "$ID" --yes`
        # with an unset variable forgot it. Nothing was named: a usage error.
        raise UsageError("ID", "empty (a session id, or a unique prefix of one)")
    if not is_utf8(reference):  # bytes that are not UTF-8 (`show $'\xff'`) start no id, and SQLite takes text only
        raise no_session(reference, database.path)
    if database.execute("SELECT 1 FROM sessions WHERE id = ?", (reference,)).fetchone():
        return reference
    reference = reference.strip()
    candidates: list[str] = [
        row[0]
        for row in database.execute(
            "SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2",
            (reference, _CANDIDATES + 1),
        )
    ]
    if not candidates:
        raise no_session(reference, database.path)
    if len(candidates) > 1:
        raise AmbiguousSession(reference, candidates[:_CANDIDATES], len(candidates) > _CANDIDATES)
    return str(candidates[0])


def load_envelope(database: Database, session_id: str) -> dict[str, Any]:
    """The whole session as the v1.2 export envelope; turns' ``step_ids`` rebuilt in seq order."""
    row = database.execute("SELECT record FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise no_session(session_id, database.path)

    def records(sql: str) -> list[dict[str, Any]]:
        return [codec.load(stored) for (stored,) in database.execute(sql, (session_id,))]

    segments = records("SELECT record FROM segments WHERE session_id = ? ORDER BY idx")
    actors = records("SELECT record FROM actors WHERE session_id = ? ORDER BY id <> 'root', id")  # the root first
    turns = records("SELECT record FROM turns WHERE session_id = ? ORDER BY idx, id")
    steps = records("SELECT record FROM steps WHERE session_id = ? ORDER BY seq")
    by_turn: dict[str, list[str]] = {turn["id"]: [] for turn in turns}
    for step in steps:
        by_turn.setdefault(step["turn_id"], []).append(step["id"])
    for turn in turns:
        turn["step_ids"] = by_turn[turn["id"]]
    return {
        "schema_version": SCHEMA_VERSION,
        "session": orjson.loads(row[0]),
        "segments": segments,
        "actors": actors,
        "turns": turns,
        "steps": steps,
    }


@dataclass(frozen=True, slots=True)
class SessionDetails:
    """Store columns that ``show`` prints next to the v1.2 records."""

    title: str
    model: str | None
    provider: str | None
    status: str | None
    git_branch: str | None
    captured_on: str
    ingested_at: str
    updated_at: str
    lead_file: str | None = None  # the file the session was last read from that makes or breaks it
    # Each helper actor's own usage (v1.2 ``metrics``; the session's metrics include it).
    helper_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    source_removed: bool = False  # its lead file is gone (its agent deleted it): the store keeps it


def session_details(database: Database, session_id: str) -> SessionDetails:
    row = database.execute(
        f"SELECT {TITLE_SQL}, s.model, s.provider, s.cline_status, s.git_branch, s.captured_on, s.ingested_at,"
        " s.updated_at, json_extract(s.source_files, '$[0].path') FROM sessions s WHERE s.id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        raise no_session(session_id, database.path)
    return replace(SessionDetails(*row), helper_metrics=helper_metrics(database, session_id))


def helper_metrics(database: Database, session_id: str) -> dict[str, dict[str, Any]]:
    """Each helper actor's own usage, by actor id (helpers without usage left out)."""
    rows = database.execute(
        "SELECT id, metrics FROM actors WHERE session_id = ? AND metrics IS NOT NULL ORDER BY id", (session_id,)
    )
    return {str(actor_id): orjson.loads(value) for actor_id, value in rows}


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    kind: str
    record_id: str
    reason: str
    replaced_at: str
    record: dict[str, Any]


def history(database: Database, session_id: str) -> list[HistoryEntry]:
    """Earlier versions of the session's records, oldest first."""
    return [
        HistoryEntry(kind, record_id, reason, replaced_at, orjson.loads(record))
        for kind, record_id, reason, replaced_at, record in database.execute(
            "SELECT kind, record_id, reason, replaced_at, record FROM history WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
    ]


@dataclass(frozen=True, slots=True)
class StoreCounts:
    sessions: int
    steps: int
    last_update: str | None


def counts(database: Database) -> StoreCounts:
    sessions = int(database.execute("SELECT count(*) FROM sessions").get)
    last_update = database.execute("SELECT max(updated_at) FROM sessions").get
    steps = int(database.execute("SELECT count(*) FROM steps").get)
    return StoreCounts(sessions=sessions, steps=steps, last_update=None if last_update is None else str(last_update))
