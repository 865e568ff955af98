"""What the review app's pages read and write, each a short use of the store.

Every call opens the store for one request and closes it: read-only for the pages (a missing
store reads as empty), a writer for a verdict. SQL stays in ``postrun.store``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from postrun.agents.registry import KINDS
from postrun.nesting import ROOT_ACTOR, helper_started
from postrun.store import activity as activity_reads
from postrun.store import browse, outline
from postrun.store.db import Database, StoreMissing, reading
from postrun.store.inbox import Inbox, inbox
from postrun.store.query import HistoryEntry, SessionDetails, history, no_session, resolve_session_id, session_details
from postrun.store.session_filter import SessionFilter
from postrun.store.session_index import SessionIndex
from postrun.store.verdicts import Verdict, record_verdicts, verdict_history
from postrun.web.present import SessionView, inline_turns, session_view, shown_part


@dataclass(frozen=True, slots=True)
class StoredSession:
    session: dict[str, Any]
    details: SessionDetails
    verdicts: list[Verdict]  # newest first
    view: SessionView
    segments: int


@dataclass(frozen=True, slots=True)
class ListPage:
    page: browse.SessionPage
    inbox: Inbox
    workspaces: list[str]
    agents: list[str]


EMPTY_INBOX = Inbox(0, 0, 0, 0, ())


def _required(database: Database | None, reference: str, db: Path) -> Database:
    if database is None:
        raise no_session(reference, db)
    return database


def agent_kinds(index: SessionIndex) -> list[str]:
    """Every agent Postrun reads, and any other kind the store holds."""
    return sorted({*KINDS, *index.agents()})


def known_agents(db: Path, index: SessionIndex) -> list[str]:
    with reading(db) as database:
        if database is not None:
            index.refresh(database)
    return agent_kinds(index)


def sessions_page(db: Path, query: SessionFilter, index: SessionIndex) -> ListPage:
    """A page of sessions, the inbox of their scope, every workspace and agent kind."""
    with reading(db) as database:
        if database is None:
            return ListPage(browse.SessionPage([], False), EMPTY_INBOX, [], agent_kinds(index))
        index.refresh(database)
        return ListPage(
            browse.session_page(database, query, index),
            inbox(database, query),
            index.workspaces(),
            agent_kinds(index),
        )


def _with_helpers(
    database: Database,
    session_id: str,
    parts: outline.SessionParts,
    turn_ids: Collection[str],
    seqs: tuple[int, int] | None = None,
) -> list[dict[str, Any]]:
    """The steps of ``turn_ids`` (``seqs``: from the first to the last seq given), and those of
    the helpers' own turns their steps started."""
    helper_turns: dict[str, set[str]] = {}
    for turn in parts.turns:
        if turn.get("actor_id", ROOT_ACTOR) != ROOT_ACTOR:
            helper_turns.setdefault(str(turn["actor_id"]), set()).add(str(turn["id"]))
    wanted = set(turn_ids)
    records = outline.turn_steps(database, session_id, wanted, seqs)
    while True:
        started = {helper_started(step) for step in records} - {None}
        more = {turn_id for actor in started for turn_id in helper_turns.get(str(actor), ())} - wanted
        if not more:
            return sorted(records, key=lambda step: int(step["seq"]))
        wanted |= more
        records += outline.turn_steps(database, session_id, more)


def stored_session(db: Path, reference: str, *, with_history: bool) -> StoredSession:
    """The session page's reads: in a big session the records of the turns it shows only."""
    with reading(db) as database:
        database = _required(database, reference, db)
        session_id = resolve_session_id(database, reference)
        parts = outline.session_parts(database, session_id)
        outlines = outline.step_outlines(database, session_id)
        inline = inline_turns(parts, outlines)
        if inline is None:
            records = outline.turn_steps(database, session_id, {step.turn_id for step in outlines})
            prompts = None
        else:
            records = _with_helpers(database, session_id, parts, inline, shown_part(parts, outlines, inline))
            prompts = outline.turn_prompts(database, session_id)
        entries: list[HistoryEntry] | None = history(database, session_id) if with_history else None
        view = session_view(parts, outlines, records, inline=inline, prompts=prompts, history=entries)
        return StoredSession(
            parts.session,
            session_details(database, session_id),
            verdict_history(database, session_id),
            view,
            len(parts.segments),
        )


def stored_turn(db: Path, session_id: str, turn_id: str, seqs: tuple[int, int] | None = None) -> SessionView:
    """One turn of a big session (``seqs``: one part of it), its helpers' steps nested: only
    its steps are read."""
    with reading(db) as database:
        database = _required(database, session_id, db)
        parts = outline.session_parts(database, session_id)
        records = _with_helpers(database, session_id, parts, {turn_id}, seqs)
    return session_view(parts, [], records, inline={turn_id}, open_edits=False)


def stored_step(db: Path, session_id: str, step_id: str) -> dict[str, Any]:
    with reading(db) as database:
        return browse.load_step(_required(database, session_id, db), session_id, step_id)


def save_verdicts(db: Path, session_ids: list[str], state: str, note: str, *, now: datetime) -> list[Verdict]:
    """The one write of the review app (one session's verdict or many): through a writer, which
    migrates an older store."""
    try:
        database = Database.open(db, create=False)
    except StoreMissing:
        raise no_session(session_ids[0] if session_ids else "", db) from None
    with database:
        return record_verdicts(database, session_ids, state, note, now=now)


def edited_files(
    db: Path, workspace: str | None, index: SessionIndex, *, since_utc: str, page: int
) -> tuple[activity_reads.FileEdits, list[str]]:
    with reading(db) as database:
        if database is None:
            return activity_reads.FileEdits([], 0, 0), []
        index.refresh(database)
        if workspace is None:
            return activity_reads.FileEdits([], 0, 0), index.workspaces()
        found = activity_reads.file_edits(database, workspace, since_utc=since_utc, page=page)
        return found, index.workspaces()


def activity(
    db: Path, index: SessionIndex, *, since_utc: str, until_utc: str | None, workspace: str | None
) -> tuple[list[activity_reads.DayActivity], list[str]]:
    with reading(db) as database:
        if database is None:
            return [], []
        found = activity_reads.activity(database, since_utc=since_utc, until_utc=until_utc, workspace=workspace)
        index.refresh(database)
        return found, index.workspaces()


def change_marker(db: Path, session_id: str | None) -> str:
    with reading(db) as database:
        return "" if database is None else browse.change_marker(database, session_id)
