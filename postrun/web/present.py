"""A stored session shaped for the session page: turns, their steps, helpers nested, bodies measured.

Pure functions over the v1.2 envelope. Step bodies (output, diffs, thinking, tool input) are
not rendered here: the page shows their size and loads them when the reader opens one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from postrun import render
from postrun.store.query import HistoryEntry
from postrun.text import one_line

ROOT_ACTOR = "root"
INLINE_TEXT_CHARS = 4_000  # longer prompts and replies load on demand like output
OPEN_EDITS_UP_TO_STEPS = 300  # in bigger sessions every body starts closed
INLINE_TURNS_UP_TO_STEPS = 300  # in bigger sessions turns load when opened (the last one starts open)


@dataclass(slots=True)
class StepView:
    record: Mapping[str, Any]
    summary: str
    outcome: str  # ok | failed | pending | ...
    label: str  # outcome with exit code, decision and reference-only notes
    flags: list[Mapping[str, Any]]
    text: str | None = None  # a prompt or reply shown inline
    body: str | None = None  # what the collapsed body holds: "12 lines of output", "diff +3 −1"…
    body_open: bool = False
    helpers: list[HelperView] = field(default_factory=list)
    earlier: list[HistoryEntry] = field(default_factory=list)

    @property
    def seq(self) -> int:
        return int(self.record["seq"])

    @property
    def type(self) -> str:
        return str(self.record["type"])

    @property
    def role(self) -> str | None:
        return str(self.record["payload"]["role"]) if self.type == "message" else None


@dataclass(slots=True)
class HelperView:
    actor_id: str
    label: str
    kind: str  # subagent | teammate | …
    steps: list[StepView]


@dataclass(slots=True)
class TurnView:
    index: int
    mode: str | None
    started_at: str
    prompt: str | None
    segment: Mapping[str, Any] | None  # set on the first turn of a later segment
    steps: list[StepView]
    id: str = ""
    lazy: bool = False  # the page shows the heading; the steps load when the reader opens it

    @property
    def failed(self) -> int:
        return sum(1 for view in self.steps if view.outcome == "failed")

    @property
    def flagged(self) -> int:
        return sum(1 for view in self.steps if view.flags)

    @property
    def seqs(self) -> tuple[int, int]:
        return (self.steps[0].seq, self.steps[-1].seq) if self.steps else (-1, -1)


@dataclass(slots=True)
class SessionView:
    turns: list[TurnView]
    unattached: list[HelperView]  # helpers no stored step says it started
    vanished: list[HistoryEntry]  # earlier versions of records no longer in the session


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1) if text else 0


def _count(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def body_description(step: Mapping[str, Any]) -> str | None:
    """What the step's collapsed body holds, or None when it has none."""
    payload = step["payload"]
    kind = step["type"]
    if kind == "command":
        lines = sum(_lines(payload.get(stream, "")) for stream in ("stdout", "stderr"))
        if lines:
            return _count(lines, "line") + " of output"
        return "error" if "error" in step else None
    if kind == "edit":
        old = _lines(payload.get("old_string", ""))
        new = _lines(payload.get("new_string", ""))
        return f"diff +{new} −{old}" if old or new else None
    if kind == "message":
        text = payload.get("text")
        if text is None or (payload["role"] != "thinking" and len(text) <= INLINE_TEXT_CHARS):
            return None
        return _count(_lines(text), "line") + (" of thinking" if payload["role"] == "thinking" else "")
    if kind == "other":
        return "tool input and result"
    return "error" if "error" in step else None


def step_view(step: Mapping[str, Any], *, open_edits: bool) -> StepView:
    payload = step["payload"]
    text = None
    if step["type"] == "message" and payload["role"] != "thinking":
        shown = payload.get("text")
        text = shown if shown is not None and len(shown) <= INLINE_TEXT_CHARS else None
    body = body_description(step)
    return StepView(
        record=step,
        summary=render.step_summary(step),
        outcome=str(step["outcome"]),
        label=render.outcome_label(step),
        flags=list(step.get("flags", [])),
        text=text,
        body=body,
        body_open=open_edits and step["type"] == "edit" and body is not None,
    )


def helper_started(step: Mapping[str, Any]) -> str | None:
    """The actor a step started, when it started one (``payload.raw.actor_id``)."""
    raw = step["payload"].get("raw") if step["type"] == "other" else None
    actor = raw.get("actor_id") if isinstance(raw, Mapping) else None
    return actor if isinstance(actor, str) and actor != ROOT_ACTOR else None


def session_view(envelope: Mapping[str, Any], history: Sequence[HistoryEntry] | None = None) -> SessionView:
    steps: Sequence[Mapping[str, Any]] = envelope["steps"]
    open_edits = len(steps) <= OPEN_EDITS_UP_TO_STEPS
    actors = {actor["id"]: actor for actor in envelope["actors"]}
    earlier: dict[str, list[HistoryEntry]] = {}
    for entry in history or ():
        if entry.kind == "step":
            earlier.setdefault(entry.record_id, []).append(entry)
    views = {step["id"]: step_view(step, open_edits=open_edits) for step in steps}
    for step_id, entries in earlier.items():
        if step_id in views:
            views[step_id].earlier = entries

    by_actor: dict[str, list[StepView]] = {}
    for step in steps:
        if step["actor_id"] != ROOT_ACTOR:
            by_actor.setdefault(step["actor_id"], []).append(views[step["id"]])

    def helper(actor_id: str) -> HelperView:
        actor = actors.get(actor_id, {})
        return HelperView(
            actor_id, str(actor.get("label") or actor_id), str(actor.get("type", "helper")), by_actor.pop(actor_id, [])
        )

    # Attach each helper under the step that started it, helpers of helpers too.
    for step in steps:
        started = helper_started(step)
        if started is not None and started in by_actor:
            views[step["id"]].helpers.append(helper(started))

    segments = {segment["index"]: segment for segment in envelope["segments"]}
    root_steps: dict[str, list[StepView]] = {}
    for step in steps:
        if step["actor_id"] == ROOT_ACTOR:
            root_steps.setdefault(step["turn_id"], []).append(views[step["id"]])
    turns = []
    current_segment = 0
    for turn in envelope["turns"]:
        if turn.get("actor_id", ROOT_ACTOR) != ROOT_ACTOR:
            continue
        turn_steps = root_steps.pop(turn["id"], [])
        segment = None
        if turn["segment_index"] != current_segment:
            current_segment = turn["segment_index"]
            segment = segments.get(current_segment, {"index": current_segment})
        prompt = next((v.record["payload"].get("text") for v in turn_steps if v.role == "user"), None)
        turns.append(
            TurnView(
                index=int(turn["index"]),
                mode=turn.get("mode"),
                started_at=str(turn["started_at"]),
                prompt=one_line(prompt, 200) if prompt else None,
                segment=segment,
                steps=turn_steps,
                id=str(turn["id"]),
            )
        )
    leftover = [view for views_left in root_steps.values() for view in views_left]
    if leftover:  # steps whose turn record is missing still show
        turns.append(TurnView(-1, None, str(leftover[0].record["at"]), None, None, leftover))
    if len(steps) > INLINE_TURNS_UP_TO_STEPS:
        for turn_view in turns[:-1]:
            turn_view.lazy = True
    unattached = [helper(actor_id) for actor_id in list(by_actor)]
    present = {step["id"] for step in steps}
    vanished = [entry for entry in history or () if entry.kind != "step" or entry.record_id not in present]
    return SessionView(turns, unattached, vanished)
