"""A session read in parts: its records but the steps, every step's outline, the steps of some turns.

A big session's page shows one turn and the headings of the others: it reads the step
records of that turn only (and the first messages of each turn, for their prompts), and
counts the rest from the steps' own columns and the step_flags index.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import orjson

from postrun.store import codec
from postrun.store.db import Database
from postrun.store.query import no_session

ROOT_ACTOR = "root"
_PROMPT_CANDIDATES = 3  # messages read per turn to find its prompt (the first, in practice)


@dataclass(frozen=True, slots=True)
class StepOutline:
    """What a step's columns say, without its record."""

    seq: int
    id: str
    turn_id: str
    type: str
    outcome: str
    flagged: bool


@dataclass(frozen=True, slots=True)
class SessionParts:
    """The session's records but its steps (all small), as in the v1.2 envelope."""

    session: dict[str, Any]
    segments: list[dict[str, Any]]
    actors: list[dict[str, Any]]  # the root first
    turns: list[dict[str, Any]]


def session_parts(database: Database, session_id: str) -> SessionParts:
    row = database.execute("SELECT record FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise no_session(session_id, database.path)

    def records(sql: str) -> list[dict[str, Any]]:
        return [codec.load(stored) for (stored,) in database.execute(sql, (session_id,))]

    return SessionParts(
        orjson.loads(row[0]),
        records("SELECT record FROM segments WHERE session_id = ? ORDER BY idx"),
        records("SELECT record FROM actors WHERE session_id = ? ORDER BY id <> 'root', id"),
        records("SELECT record FROM turns WHERE session_id = ? ORDER BY idx, id"),
    )


def step_outlines(database: Database, session_id: str) -> list[StepOutline]:
    """Every step of the session in seq order, from its columns (no record is read)."""
    flagged = {
        str(step_id)
        for (step_id,) in database.execute(
            "SELECT DISTINCT step_id FROM step_flags WHERE session_id = ?", (session_id,)
        )
    }
    return [
        StepOutline(seq, step_id, turn_id, kind, outcome, step_id in flagged)
        for seq, step_id, turn_id, kind, outcome in database.execute(
            "SELECT seq, id, turn_id, type, outcome FROM steps WHERE session_id = ? ORDER BY seq", (session_id,)
        )
    ]


def turn_steps(
    database: Database, session_id: str, turn_ids: Collection[str], seqs: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """The step records of the turns ``turn_ids`` (``seqs``: those from the first to the last
    seq given only), in seq order."""
    first, last = seqs if seqs is not None else (None, None)
    return [
        codec.load(stored)
        for (stored,) in database.execute(
            "SELECT record FROM steps WHERE session_id = ? AND turn_id IN (SELECT value FROM json_each(?))"
            " AND (?3 IS NULL OR seq BETWEEN ?3 AND ?4) ORDER BY seq",
            (session_id, orjson.dumps(sorted(turn_ids)).decode(), first, last),
        )
    ]


def turn_prompts(database: Database, session_id: str) -> dict[str, str]:
    """Each turn's prompt (the text of its lead's first user message), by turn id: the first
    message of each turn is read, and a few more of a turn that does not start with one."""
    prompts: dict[str, str] = {}
    tried: set[str] = set()
    for candidates in (1, _PROMPT_CANDIDATES):
        for turn_id, stored in database.execute(
            "SELECT turn_id, record FROM steps WHERE rowid IN ("
            "  SELECT rowid FROM (SELECT rowid, turn_id, row_number() OVER (PARTITION BY turn_id ORDER BY seq) AS n"
            "                       FROM steps WHERE session_id = ?1 AND type = 'message')"
            "   WHERE n <= ?2 AND turn_id NOT IN (SELECT value FROM json_each(?3)))"
            " ORDER BY seq",
            (session_id, candidates, orjson.dumps(sorted(prompts)).decode()),
        ):
            tried.add(str(turn_id))
            step = codec.load(stored)
            text = step["payload"].get("text")
            if turn_id not in prompts and step["payload"]["role"] == "user" and step["actor_id"] == ROOT_ACTOR and text:
                prompts[str(turn_id)] = str(text)
        if tried <= set(prompts):
            break
    return prompts
