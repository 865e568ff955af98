"""The mapping's fold: each message's steps in order, keyed by their inputs (``CacheKey``),
with the state before every message kept so the next fold can start at the first one that
changed (see ``mapping``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from postrun.agents.cline.segments import SegmentPlan
from postrun.agents.cline.steps import Context, MessageSteps, SessionFacts, map_message
from postrun.agents.cline.transcript import Fingerprint, Transcript
from postrun.records import StepRow

CacheKey = tuple[Fingerprint, Context]  # (the message's JSON, its context)


class Before(NamedTuple):
    """The fold's state just before one message."""

    rows: int
    turns: int  # turns opened so far
    turn_id: str
    turn_segment: int
    at: int | str
    reads: int = 0  # read texts so far


@dataclass(frozen=True, slots=True)
class FoldResume:
    """Where the last fold ended, so the next one can start at the first changed message."""

    inputs: tuple[str, str, tuple[int, ...]]  # (header, started_at, segment run counts) it ran under
    keys: tuple[CacheKey, ...]  # each message's cache key, in order
    before: tuple[Before, ...]  # the state before each message, then after the last
    rows: tuple[StepRow, ...]
    opened_turns: tuple[dict[str, Any], ...]
    read_texts: tuple[tuple[str, str], ...] = ()  # (read step id, what the read returned)


@dataclass(frozen=True, slots=True)
class Folded:
    cached: dict[CacheKey, MessageSteps]
    rows: tuple[StepRow, ...]
    opened_turns: tuple[dict[str, Any], ...]
    resume: FoldResume


def fold_messages(
    transcript: Transcript,
    facts: SessionFacts,
    plan: SegmentPlan,
    started_at: str,
    header: str,
    reusable: Mapping[CacheKey, MessageSteps],
    last: FoldResume | None,
) -> Folded:
    """The steps and turns of ``transcript``'s messages; ``reusable`` holds the steps the last
    mapping made under the same ``header``, ``last`` where its fold ended."""
    inputs = (header, started_at, plan.run_counts)
    start = min(transcript.first_changed, len(last.keys)) if last is not None and last.inputs == inputs else 0
    if last is not None and start:
        # The messages before ``start`` are unchanged, and so is everything the fold made of them.
        cached = dict(reusable)
        for stale in last.keys[start:]:
            cached.pop(stale, None)
        state = last.before[start]
        rows, opened_turns = list(last.rows[: state.rows]), list(last.opened_turns[: state.turns])
        read_texts = list(last.read_texts[: state.reads])
        keys, before = list(last.keys[:start]), list(last.before[:start])
        turn_id, turn_segment, at = state.turn_id, state.turn_segment, state.at
    else:
        cached, rows, opened_turns, keys, before, read_texts = {}, [], [], [], [], []
        turn_id, turn_segment, at = "turn:0", 0, started_at
    by_position = transcript.by_position
    next_turn = len(opened_turns) + 1
    next_turn_segment = plan.segment_for_turn(next_turn)  # changes only when a turn opens
    for message in transcript.messages[start:]:
        before.append(Before(len(rows), len(opened_turns), turn_id, turn_segment, at, len(read_texts)))
        if message.ts is not None:
            at = message.ts  # a message without ts keeps the previous message's time
        answered = transcript.answers.get(message.position)
        answers = sorted(answered.items()) if answered else ()  # most messages make no call
        context = Context(
            seq=len(rows),
            turn_id=turn_id,
            turn_segment=turn_segment,
            next_turn=next_turn,
            next_turn_segment=next_turn_segment,
            at=at,
            key=message.key,
            tool_keys=message.tool_keys,
            results=tuple([(call, by_position[answer].fingerprint, block) for call, (answer, block) in answers]),
            bound=message.bound,
        )
        key = (message.fingerprint, context)
        steps = reusable.get(key) if reusable else None  # a first mapping need not hash the key twice
        if steps is None:
            results = {call: transcript.blocks(by_position[answer])[block] for call, (answer, block) in answers}
            steps = map_message(message, transcript.raw(message), transcript.blocks(message), results, context, facts)
        cached[key] = steps
        keys.append(key)
        rows.extend(steps.rows)
        read_texts.extend(steps.read_texts)
        if steps.opened_turn is not None:
            opened_turns.append(steps.opened_turn)
            turn_id, turn_segment = steps.opened_turn["id"], steps.opened_turn["segment_index"]
            next_turn = len(opened_turns) + 1
            next_turn_segment = plan.segment_for_turn(next_turn)
    before.append(Before(len(rows), len(opened_turns), turn_id, turn_segment, at, len(read_texts)))
    folded_rows, folded_turns = tuple(rows), tuple(opened_turns)
    resume = FoldResume(inputs, tuple(keys), tuple(before), folded_rows, folded_turns, tuple(read_texts))
    return Folded(cached, folded_rows, folded_turns, resume)
