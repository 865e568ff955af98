"""A stored session shaped for the session page: turns, their steps, helpers nested, bodies measured.

Pure functions over v1.2 records and the steps' outlines: a big session's page holds the
records of the turns it shows only. Step bodies (output, diffs, thinking, tool input) are
not rendered here: the page shows their size and loads them when the reader opens one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from postrun import render
from postrun.nesting import ROOT_ACTOR, actor_label, nest
from postrun.store.outline import SessionParts, StepOutline
from postrun.store.query import HistoryEntry
from postrun.text import one_line

INLINE_TEXT_CHARS = 4_000  # longer prompts and replies load on demand like output
OPEN_EDITS_UP_TO_STEPS = 300  # in bigger sessions every body starts closed
INLINE_TURNS_UP_TO_STEPS = 300  # in bigger sessions turns load when opened (the last one starts open)
# and a turn of more lead steps than this comes in parts of this many (its last part starts
# open): one prompt followed by thousands of steps is a page of a few hundred all the same.
TURN_PART_STEPS = 300


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
    steps: list[StepView]  # the lead's (helpers nested); empty while the turn is lazy
    id: str = ""
    lazy: bool = False  # the page shows the heading; the steps load when the reader opens it
    count: int = 0  # every step of the turn, helpers' included
    failed: int = 0
    flagged: int = 0
    seqs: tuple[int, int] = (-1, -1)  # the first and last seq of its steps
    part: int = 0  # in a turn of more than TURN_PART_STEPS lead steps: which part (1, 2, ...)

    @property
    def anchor(self) -> str:
        """The element id: one per turn, or per part of a turn that comes in parts."""
        return f"turn-{self.index}" + (f"-{self.part}" if self.part else "")


@dataclass(slots=True)
class SessionView:
    turns: list[TurnView]
    unattached: list[HelperView]  # helpers no stored step says it started
    vanished: list[HistoryEntry]  # earlier versions of records no longer in the session
    steps: int = 0
    failed: int = 0
    flagged: int = 0


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


@dataclass(slots=True)
class _Figures:
    count: int = 0
    failed: int = 0
    flagged: int = 0
    first: int = -1
    last: int = -1

    def add(self, step: StepOutline) -> None:
        """Count ``step`` in (steps come in seq order)."""
        self.count += 1
        self.failed += step.outcome == "failed"
        self.flagged += step.flagged
        if self.first < 0:
            self.first = step.seq
        self.last = step.seq


def inline_turns(parts: SessionParts, outlines: Sequence[StepOutline]) -> set[str] | None:
    """The turns a session's page shows in full (None: all); in a big session the last one,
    or the steps whose turn record is missing, which the page shows last."""
    if len(outlines) <= INLINE_TURNS_UP_TO_STEPS:
        return None
    known = {str(turn["id"]) for turn in parts.turns}
    leftover = {step.turn_id for step in outlines if step.turn_id not in known}
    if leftover:
        return leftover
    lead = [str(turn["id"]) for turn in parts.turns if turn.get("actor_id", ROOT_ACTOR) == ROOT_ACTOR]
    return set(lead[-1:])


def turn_parts(steps: Sequence[StepOutline]) -> list[Sequence[StepOutline]]:
    """A turn's lead steps (in seq order) in parts of TURN_PART_STEPS, counted from its start
    so that a part keeps its steps as the turn grows."""
    return [steps[at : at + TURN_PART_STEPS] for at in range(0, len(steps), TURN_PART_STEPS)]


def shown_part(parts: SessionParts, outlines: Sequence[StepOutline], inline: set[str] | None) -> tuple[int, int] | None:
    """The seqs of the part a big session's page shows of its one open turn, when that turn
    comes in parts: its last part (None: the whole of the turns shown; steps without a turn
    record show whole, as ``session_view`` does not part them)."""
    if inline is None or len(inline) != 1 or not inline <= {str(turn["id"]) for turn in parts.turns}:
        return None
    (turn_id,) = inline
    found = turn_parts([step for step in outlines if step.turn_id == turn_id])
    return (found[-1][0].seq, found[-1][-1].seq) if len(found) > 1 else None


def session_view(
    parts: SessionParts,
    outlines: Sequence[StepOutline],
    records: Sequence[Mapping[str, Any]],
    *,
    inline: set[str] | None = None,
    prompts: Mapping[str, str] | None = None,
    history: Sequence[HistoryEntry] | None = None,
    open_edits: bool | None = None,
) -> SessionView:
    """The page of a session: every turn of the lead, the ``inline`` ones (None: all) with
    their steps from ``records``, the others as headings counted from ``outlines``
    (``open_edits``: whether edits start open; by default in small sessions)."""
    actors = {str(actor["id"]): actor for actor in parts.actors}
    earlier: dict[str, list[HistoryEntry]] = {}
    for entry in history or ():
        if entry.kind == "step":
            earlier.setdefault(entry.record_id, []).append(entry)
    nesting = nest(records)
    if open_edits is None:
        open_edits = len(outlines) <= OPEN_EDITS_UP_TO_STEPS

    def view(step: Mapping[str, Any]) -> StepView:
        shown = step_view(step, open_edits=open_edits)
        shown.earlier = earlier.get(str(step["id"]), [])
        shown.helpers = [helper(actor_id, steps) for actor_id, steps in nesting.helpers_of(step)]
        return shown

    def helper(actor_id: str, steps: Sequence[Mapping[str, Any]]) -> HelperView:
        kind, label = actor_label(actor_id, actors)
        return HelperView(actor_id, label, kind, [view(step) for step in steps])

    figures: dict[str, _Figures] = {}
    by_turn: dict[str, list[StepOutline]] = {}
    for outline in outlines:
        figures.setdefault(outline.turn_id, _Figures()).add(outline)
        by_turn.setdefault(outline.turn_id, []).append(outline)
    segments = {segment["index"]: segment for segment in parts.segments}
    turns = []
    current_segment = 0
    for turn in parts.turns:
        if turn.get("actor_id", ROOT_ACTOR) != ROOT_ACTOR:
            continue
        turn_id = str(turn["id"])
        shown = inline is None or turn_id in inline
        steps = [view(step) for step in nesting.lead.get(turn_id, [])] if shown else []
        segment = None
        if turn["segment_index"] != current_segment:
            current_segment = turn["segment_index"]
            segment = segments.get(current_segment, {"index": current_segment})
        prompt = next((v.record["payload"].get("text") for v in steps if v.role == "user"), None) if shown else None
        prompt = prompt or (prompts or {}).get(turn_id)
        parted = turn_parts(by_turn.get(turn_id, [])) if inline is not None else []
        if len(parted) <= 1:
            turns.append(_turn(turn, figures.get(turn_id, _Figures()), steps, segment, prompt, lazy=not shown))
            continue
        for number, in_part in enumerate(parted, 1):
            part = _Figures()
            for outline in in_part:
                part.add(outline)
            open_part = shown and number == len(parted)  # the page read the last part's steps only
            turns.append(_turn(turn, part, steps if open_part else [], segment if number == 1 else None,
                               prompt if number == 1 else None, lazy=not open_part, part=number))  # fmt: skip
    known = {str(turn["id"]) for turn in parts.turns}
    leftover = [view(step) for turn_id, steps in nesting.lead.items() if turn_id not in known for step in steps]
    if leftover:  # steps whose turn record is missing still show
        left = _Figures()
        for outline in outlines:
            if outline.turn_id not in known:
                left.add(outline)
        turns.append(TurnView(-1, None, str(leftover[0].record["at"]), None, None, leftover, "", False,
                              left.count, left.failed, left.flagged, (left.first, left.last)))  # fmt: skip
    unattached = [helper(actor_id, nesting.helpers[actor_id]) for actor_id in nesting.unattached]
    present = {outline.id for outline in outlines}
    vanished = [entry for entry in history or () if entry.kind != "step" or entry.record_id not in present]
    return SessionView(
        turns,
        unattached,
        vanished,
        len(outlines),
        sum(figure.failed for figure in figures.values()),
        sum(figure.flagged for figure in figures.values()),
    )


def _turn(
    turn: Mapping[str, Any],
    figures: _Figures,
    steps: list[StepView],
    segment: Mapping[str, Any] | None,
    prompt: str | None,
    *,
    lazy: bool,
    part: int = 0,
) -> TurnView:
    return TurnView(
        index=int(turn["index"]),
        mode=turn.get("mode"),
        started_at=str(turn["started_at"]),
        prompt=one_line(prompt, 200) if prompt else None,
        segment=segment,
        steps=steps,
        id=str(turn["id"]),
        lazy=lazy,
        count=figures.count,
        failed=figures.failed,
        flagged=figures.flagged,
        seqs=(figures.first, figures.last),
        part=part,
    )
