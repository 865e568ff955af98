"""Helpers (sub-agents and teammates) as actors of the lead's session, and where their steps go.

A helper's transcript maps by the lead's rules into steps of its own actor. Here those
steps are placed among the lead's: right after the step that started the helper
(``spawn_agent``, ``team_run_task``), matched by the task it was given; a helper that no
step names goes after the lead's last step of the turn whose time range holds its first
message, else at the end. Its steps join the turn (and segment) of the step they follow,
``seq`` is renumbered over the whole session, and the starting step names the helper in
``payload.raw.actor_id``. Pure functions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from postrun.agents.cline.results import decode_json_text
from postrun.agents.cline.steps import ROOT_ACTOR
from postrun.records import StepRow, StoredActor
from postrun.timestamps import normalize_timestamp

STARTING_TOOLS = frozenset({"spawn_agent", "team_run_task"})
TEAMMATE_SEPARATOR = "__"  # <teammate name>__<team task id>.messages.json


@dataclass(frozen=True, slots=True)
class Helper:
    """One helper ready to be placed: its actor, its steps in its own order, its usage."""

    actor: dict[str, Any]
    rows: tuple[StepRow, ...]
    metrics: dict[str, Any] | None

    @property
    def id(self) -> str:
        return str(self.actor["id"])

    @property
    def task(self) -> str | None:
        """The task it received: the text of its first user message."""
        for row in self.rows:
            payload = row.record["payload"]
            if row.record["type"] == "message" and payload.get("role") == "user":
                text = payload.get("text")
                return text.strip() if isinstance(text, str) else None
        return None

    @property
    def teammate(self) -> str | None:
        return str(self.actor.get("label")) if self.actor["type"] == "teammate" else None

    @classmethod
    def kept(cls, stored: StoredActor) -> Helper:
        return cls(stored.record, stored.steps, stored.metrics)


def helper_actor(actor_id: str, document: Any, rows: Sequence[StepRow]) -> dict[str, Any]:
    """The actor record of a helper transcript: ``teammate`` or ``subagent``, under the root.

    The type is the one the file states (``agent``), else what its name says; the label
    is the teammate's name, or the first line of the sub-agent's task.
    """
    stated = document.get("agent") if isinstance(document, dict) else None
    if stated in ("subagent", "teammate"):
        kind = stated
    else:
        kind = "teammate" if TEAMMATE_SEPARATOR in actor_id else "subagent"
    actor: dict[str, Any] = {"id": actor_id, "type": kind, "parent_id": ROOT_ACTOR}
    if kind == "teammate":
        name = actor_id.rpartition(TEAMMATE_SEPARATOR)[0]
        actor["label"] = name or actor_id
    else:
        task = Helper(actor, tuple(rows), None).task
        first_line = task.splitlines()[0].strip() if task else ""
        actor["label"] = first_line or actor_id
    return actor


def place_helpers(lead: Sequence[StepRow], turns: Sequence[dict[str, Any]], helpers: Sequence[Helper]) -> list[StepRow]:
    """The session's steps: the lead's with each helper's placed among them, ``seq`` from 0.

    ``turns`` are the lead's turn records (``id``, ``started_at``); a step before the first
    prompt is in ``turn:0``, which starts at the first step.
    """
    if not any(helper.rows for helper in helpers) and (not lead or lead[-1].record["seq"] == len(lead) - 1):
        return list(lead)  # numbered from 0 already: nothing to place (the common case, kept cheap)
    after: dict[int, list[Helper]] = {}
    starts: dict[int, str] = {}  # lead step index -> the helper it started
    at_end: list[Helper] = []
    requests = _start_requests(lead)
    for helper in sorted((h for h in helpers if h.rows), key=_helper_order):
        index = _starting_step(helper, requests, starts)
        if index is not None:
            starts[index] = helper.id
        else:
            index = _last_step_of_turn_holding(helper, lead, turns)
        if index is None:
            at_end.append(helper)
        else:
            after.setdefault(index, []).append(helper)
    placed: list[StepRow] = []
    for index, row in enumerate(lead):
        changes: dict[str, Any] = {"seq": len(placed)}
        if index in starts:
            payload = row.record["payload"]
            changes["payload"] = {**payload, "raw": {**_dict(payload.get("raw")), "actor_id": starts[index]}}
        placed.append(row.with_fields(**changes))
        for helper in after.get(index, ()):
            _append(placed, helper, row.record["turn_id"], row.record["segment_index"])
    turn_id, segment = (lead[-1].record["turn_id"], lead[-1].record["segment_index"]) if lead else ("turn:0", 0)
    for helper in at_end:
        _append(placed, helper, turn_id, segment)
    return placed


def _append(placed: list[StepRow], helper: Helper, turn_id: str, segment: int) -> None:
    for row in helper.rows:
        placed.append(row.with_fields(seq=len(placed), turn_id=turn_id, segment_index=segment))


def _helper_order(helper: Helper) -> tuple[str, str]:
    return _instant(helper.rows[0].record["at"]) or "", helper.id


def _start_requests(lead: Sequence[StepRow]) -> list[tuple[int, str, str | None]]:
    """(lead step index, task, teammate named) of every step that starts a helper."""
    found: list[tuple[int, str, str | None]] = []
    for index, row in enumerate(lead):
        payload = row.record["payload"]
        if row.record["type"] != "other" or payload.get("tool_name") not in STARTING_TOOLS:
            continue
        request = decode_json_text(_dict(payload.get("raw")).get("input"))
        task = request.get("task") if isinstance(request, dict) else None
        if isinstance(task, str) and task.strip():
            agent = request.get("agentId")
            found.append((index, task.strip(), agent if isinstance(agent, str) else None))
    return found


def _starting_step(helper: Helper, requests: list[tuple[int, str, str | None]], taken: dict[int, str]) -> int | None:
    task = helper.task
    if task is None:
        return None
    for index, requested, agent in requests:
        if index not in taken and requested == task and (agent is None or agent == helper.teammate):
            return index
    return None


def _last_step_of_turn_holding(helper: Helper, lead: Sequence[StepRow], turns: Sequence[dict[str, Any]]) -> int | None:
    first = _instant(helper.rows[0].record["at"])
    if first is None or not lead:
        return None
    bounds = sorted(
        (start, str(turn["id"])) for turn in turns if (start := _instant(turn.get("started_at"))) is not None
    )
    if any(row.record["turn_id"] == "turn:0" for row in lead):
        opened = _instant(lead[0].record["at"])
        if opened is not None:
            bounds.insert(0, (opened, "turn:0"))
    holding = None
    for start, turn_id in bounds:
        if start <= first:
            holding = turn_id  # the latest turn that started at or before the helper
    if holding is None:
        return None
    return next((i for i in range(len(lead) - 1, -1, -1) if lead[i].record["turn_id"] == holding), None)


def _instant(value: Any) -> str | None:
    """A timestamp as UTC text that sorts in time order; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return normalize_timestamp(value)
    except ValueError:
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
