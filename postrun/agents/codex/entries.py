"""One step source of a thread (a call, an item, or both) and the v1.2 records it makes.

An ``Entry`` gathers every line of a rollout that carries one id: the ``function_call``,
its ``function_call_output`` and the ``item_completed`` of the same call id. Its records
are a pure function of the entry, its turn (``Task``), where that turn is in the session
(``Place``) and the thread (``Facts``): when a line adds to an entry, only that entry's
records are made again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from postrun.agents.codex.calls import call_parts, decision, output_text, refused
from postrun.agents.codex.items import MESSAGE_ITEMS, Parts, item_parts, tool_error
from postrun.agents.codex.values import mapping, text

CHANNELS = ("conversation",)
ROOT_ACTOR = "root"
NO_TURN = "turn:0"


class Place(NamedTuple):
    """Where a thread's turn is in the session: the v1.2 turn and segment of its steps."""

    turn_id: str
    segment: int


UNPLACED = Place(NO_TURN, 0)


@dataclass(frozen=True, slots=True)
class Facts:
    """The thread the records belong to."""

    session_id: str
    actor_id: str
    prefix: str  # of every step id: ``""`` for the root, ``<thread id>/`` for a child


class Task(NamedTuple):
    """One Codex turn of a thread (``task_started`` ... ``task_complete``)."""

    turn_id: str
    line: int
    at: str
    segment: int  # the session segment it started in (the root's resumes count)
    mode: str | None = None
    parent_turn: str | None = None
    root_turn: str | None = None
    before: str | None = None  # the latest prompted turn when it started (root)
    policy: str | None = None  # ``turn_context.approval_policy``
    cwd: str | None = None
    prompt: str | None = None  # the id of its prompt's step: a prompted turn (root)
    ended: bool = False


class Call(NamedTuple):
    """A function call the model made, and its output once it came."""

    name: str
    arguments: Any
    answered: bool = False
    output: Any = None


class Entry(NamedTuple):
    """Everything a thread's lines said under one step id, in the order of its first line,
    with the policy and cwd of its turn when that line came (its steps depend on nothing
    that comes later but what ``entry_records`` is given)."""

    key: str
    line: int  # its first line: the step's place in the thread
    at: str  # that line's time
    group: str | None  # the Codex turn it belongs to
    policy: str | None = None
    cwd: str | None = None
    call: Call | None = None
    item: dict[str, Any] | None = None
    item_at: str | None = None  # the item's ``started_at_ms``
    summary: str | None = None  # a compaction's text (``compacted.message``)
    parts: Parts | None = None  # a step read from the history itself (a legacy rollout)

    @property
    def is_tool(self) -> bool:
        if self.item is not None:
            return text(self.item.get("type")) not in MESSAGE_ITEMS
        return self.call is not None or (self.parts is not None and self.parts.type != "message")

    @property
    def pending(self) -> bool:
        """A call that has neither a result nor an item yet."""
        return self.item is None and self.call is not None and not self.call.answered


def entry_records(entry: Entry, place: Place, facts: Facts, ended: bool) -> tuple[dict[str, Any], ...]:
    """The entry's step records (``seq`` 0: the session's order is set when they are placed).
    ``ended``: the entry's turn is over, so a call without a result will get none."""
    call = entry.call
    if entry.item is not None:
        name, arguments, output = (call.name, call.arguments, call.output) if call is not None else (None, None, None)
        found = item_parts(entry.item, name, arguments, output, entry.summary)
        at = entry.item_at or entry.at
    elif call is not None:
        found = [call_parts(call.name, call.arguments, call.output, call.answered, entry.cwd, ended)]
        at = entry.at
    elif entry.parts is not None:
        found, at = [entry.parts], entry.at
    else:
        return ()
    if not entry.is_tool:
        return tuple(_record(entry.key, parts, at, "n/a", place, facts) for parts in found)
    item = entry.item or {}
    # The item's own error first: a refused MCP call's output wraps the same text in timing lines.
    refusal = refused(
        mapping(item.get("error")).get("message"),
        call.output if call is not None else None,
        item.get("aggregated_output"),
    )
    if item.get("status") == "declined" and refusal is None:
        # §5.4: the message is the output, else Codex's refusal text ("exec command rejected
        # by user" goes to the model when the item's output is empty), never a word of ours.
        answer = output_text(call.output) if call is not None else None
        refusal = output_text(item.get("aggregated_output")) or answer or "declined"
    chosen = decision(entry.policy, call.arguments if call is not None else None, refusal, not entry.pending)
    records: list[dict[str, Any]] = []
    for parts in found:
        if refusal is not None:
            parts = parts._replace(outcome="failed", error=tool_error(refusal))
        records.append(_record(entry.key, parts, at, chosen, place, facts))
    return tuple(records)


def _record(key: str, parts: Parts, at: str, chosen: str, place: Place, facts: Facts) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": f"{facts.prefix}{key}{parts.suffix}",
        "session_id": facts.session_id,
        "segment_index": place.segment,
        "turn_id": place.turn_id,
        "actor_id": facts.actor_id,
        "seq": 0,
        "at": at,
        "type": parts.type,
        "decision": chosen,
        "outcome": parts.outcome,
        "content_status": parts.content_status,
        "channels": list(CHANNELS),
        "flags": [],
        "payload": parts.payload,
    }
    if parts.error is not None:
        record["error"] = parts.error
    return record


def placed(record: dict[str, Any], place: Place) -> dict[str, Any]:
    """The record in another turn or segment."""
    if record["turn_id"] == place.turn_id and record["segment_index"] == place.segment:
        return record
    return {**record, "turn_id": place.turn_id, "segment_index": place.segment}
