"""The session's steps as ``StepRow``s, in order, and its turns: built again only where
something changed since the last mapping.

A step is built when it is new or what it depends on changed (its result came, its process
ended, its sub-agent got linked, the session's start moved for a step without a time of its
own); a step that only moved gets its new place. While the transcripts only grew and the
links between them held (``Shape``), the new steps are placed at the ends of their blocks
(``place.extend``) and only the steps from the first that moved are looked at again, so one
new line costs what that line changes, not the session's length.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from postrun.agents.claude_code.fold import ROOT_ACTOR, Block, Entry, Fold, Message
from postrun.agents.claude_code.place import Plan, Shape, Slot, extend, plan
from postrun.agents.claude_code.results import Call
from postrun.agents.claude_code.tools import call_step
from postrun.records import StepRow

_CHANNELS = ("conversation",)


@dataclass(frozen=True, slots=True)
class Assembly:
    """The last mapping's steps, turns and order, and what they were assembled under."""

    links: Shape
    inputs: tuple[str, int]  # (the session's start, its last segment)
    plan: Plan
    rows: list[StepRow]
    turns: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Assembled:
    assembly: Assembly
    rebuilt: dict[str, dict[int, Entry]]  # the entries built again, by actor and index


def assemble(
    session_id: str,
    folds: Mapping[str, Fold],
    links: Shape,
    started_at: str,
    last: Assembly | None,
) -> Assembled:
    """Every step of ``folds`` placed as ``links`` says, built where needed."""
    main = folds[ROOT_ACTOR]
    inputs = (started_at, len(main.segments) - 1)
    extended = None
    if last is not None and last.links == links and last.inputs == inputs:
        extended = extend(last.plan, folds, links)
    rebuilt: dict[str, dict[int, Entry]] = {}
    if extended is None or last is None:
        placed, first = plan(folds, links), 0
        rows: list[StepRow] = []
    else:
        placed, first = extended
        rows = last.rows[:first]
        for actor_id, fold in folds.items():
            for index in fold.touched:  # a result came for a step that did not move
                position = placed.index[(actor_id, index)]
                if position < first:
                    rows[position] = _row(session_id, placed.order[position], position, fold, inputs, rebuilt)
    for position in range(first, len(placed.order)):
        slot = placed.order[position]
        rows.append(_row(session_id, slot, position, folds[slot[0]], inputs, rebuilt))
    turns = None
    if last is not None and extended is not None and first == len(last.rows):
        turns = _more_turns(session_id, main, last.turns, rows[first:], started_at)
    if turns is None:
        turns = _turns(session_id, main, rows, started_at)
    return Assembled(Assembly(links, inputs, placed, rows, turns), rebuilt)


def _row(
    session_id: str,
    slot: Slot,
    seq: int,
    fold: Fold,
    inputs: tuple[str, int],
    rebuilt: dict[str, dict[int, Entry]],
) -> StepRow:
    actor_id, index, turn_id, segment, spawned = slot
    entry = fold.entries[index]
    body = entry.body
    # A call with no result whose process ended (a later segment began) will never get one.
    closed = isinstance(body, Call) and body.result is None and segment < inputs[1]
    at = entry.at if entry.at is not None else inputs[0]
    built = (closed, spawned, at)
    row = entry.row
    if row is None or entry.built != built:
        row = StepRow.build(_record(session_id, entry, actor_id, seq, turn_id, segment, at, closed, spawned))
        rebuilt.setdefault(actor_id, {})[index] = Entry(entry.id, body, entry.at, entry.turn, entry.segment, row, built)
        return row
    record = row.record
    if record["seq"] != seq or record["turn_id"] != turn_id or record["segment_index"] != segment:
        row = row.with_fields(seq=seq, turn_id=turn_id, segment_index=segment)
    return row


def _record(
    session_id: str,
    entry: Entry,
    actor_id: str,
    seq: int,
    turn_id: str,
    segment: int,
    at: str,
    closed: bool,
    spawned: str | None,
) -> dict[str, Any]:
    body = entry.body
    record: dict[str, Any] = {
        "id": entry.id,
        "session_id": session_id,
        "segment_index": segment,
        "turn_id": turn_id,
        "actor_id": actor_id,
        "seq": seq,
        "at": at,
    }
    if isinstance(body, Call):
        step = call_step(body, closed=closed, spawned=spawned)
        record.update(
            type=step.type,
            decision=step.decision,
            outcome=step.outcome,
            content_status=step.content_status,
            payload=step.payload,
        )
        if step.error is not None:
            record["error"] = step.error
    elif isinstance(body, Message):
        payload: dict[str, Any] = {"role": body.role}
        if body.text is not None:
            payload["text"] = body.text
        record.update(type="message", decision="n/a", outcome="ok", content_status="inline", payload=payload)
    else:
        assert isinstance(body, Block)
        payload = {"tool_name": f"block:{body.block.get('type')}", "raw": {"block": body.block}}
        record.update(type="other", decision="n/a", outcome="ok", content_status="inline", payload=payload)
    record["channels"] = list(_CHANNELS)
    record["flags"] = []
    return record


def _turns(session_id: str, main: Fold, rows: list[StepRow], started_at: str) -> list[dict[str, Any]]:
    step_ids: dict[str, list[str]] = {}
    for row in rows:
        record = row.record
        step_ids.setdefault(record["turn_id"], []).append(record["id"])
    turns: list[dict[str, Any]] = []
    if "turn:0" in step_ids:
        first = next(row.record["at"] for row in rows if row.record["turn_id"] == "turn:0")
        turns.append(_turn(session_id, "turn:0", 0, 0, first, step_ids["turn:0"]))
    turns.extend(_opened(session_id, opened, step_ids.get(opened["id"], []), started_at) for opened in main.turns)
    return turns


def _more_turns(
    session_id: str, main: Fold, last: list[dict[str, Any]], added: list[StepRow], started_at: str
) -> list[dict[str, Any]] | None:
    """The last mapping's turns with the steps added at the end of the session (and the turns
    opened since); each turn changed is a new record, the others are the same. None when a
    step went to a turn that had no record (the one before the first prompt)."""
    turns = list(last)
    by_id = {turn["id"]: position for position, turn in enumerate(turns)}
    for opened in main.turns[len(turns) - ("turn:0" in by_id) :]:
        by_id[opened["id"]] = len(turns)
        turns.append(_opened(session_id, opened, [], started_at))
    changed: set[int] = set()
    for row in added:
        record = row.record
        position = by_id.get(record["turn_id"])
        if position is None:
            return None
        if position not in changed:
            turns[position] = {**turns[position], "step_ids": list(turns[position]["step_ids"])}
            changed.add(position)
        turns[position]["step_ids"].append(record["id"])
    return turns


def _opened(session_id: str, opened: dict[str, Any], step_ids: list[str], started_at: str) -> dict[str, Any]:
    turn = _turn(
        session_id,
        opened["id"],
        opened["index"],
        opened["segment_index"],
        opened["at"] if opened["at"] is not None else started_at,
        step_ids,
    )
    if "prompt_id" in opened:
        turn["prompt_id"] = opened["prompt_id"]
    turn["mode"] = opened["mode"]
    return turn


def _turn(session_id: str, turn_id: str, index: int, segment: int, at: str, step_ids: list[str]) -> dict[str, Any]:
    return {
        "id": turn_id,
        "session_id": session_id,
        "segment_index": segment,
        "actor_id": ROOT_ACTOR,
        "index": index,
        "started_at": at,
        "step_ids": step_ids,
    }
