"""One message's steps, mapped from that message alone.

``map_message`` is a pure function of the message, the result blocks its calls
were answered with, its ``Context`` and the ``SessionFacts``: the mapping cache
relies on that, so nothing else may be read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from postrun.agents.cline.text import UserText, is_synthetic, prompt_text, unwrap
from postrun.agents.cline.tools import ToolContext, map_tool_call
from postrun.agents.cline.transcript import Fingerprint, Message, wrong_shape
from postrun.records import StepRow
from postrun.review.secrets import may_hold_secrets
from postrun.schema import SchemaError
from postrun.timestamps import iso_from_ms

ROOT_ACTOR = "root"
CHANNELS = ("conversation",)


class Context(NamedTuple):
    """Everything besides the message and its results that its steps depend on."""

    seq: int  # of its first step
    turn_id: str  # the turn open before it
    turn_segment: int
    next_turn: int  # the index of the turn a prompt here opens
    next_turn_segment: int
    at: int | str  # its time: epoch ms, or the session's start (ISO) when none came before
    key: str  # unique id base of its non-tool steps
    tool_keys: tuple[tuple[int, str], ...]  # (block, unique id base) of each call
    results: tuple[tuple[int, Fingerprint, int], ...]  # (call block, the answer's message, answer block)
    bound: tuple[int, ...]  # its tool_result blocks that answer a call (they make no step)


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """Session-wide facts the steps depend on (a change re-maps every message)."""

    session_id: str
    where: str  # the messages file, for errors
    tools: ToolContext
    # Whose transcript this is. A helper's steps carry its actor and ids prefixed with it
    # (its call ids repeat the lead's), and its messages never open a turn.
    actor_id: str = ROOT_ACTOR

    @property
    def id_prefix(self) -> str:
        return "" if self.actor_id == ROOT_ACTOR else f"{self.actor_id}/"


# Made for every message (a NamedTuple: built several times faster than a frozen dataclass).
class MessageSteps(NamedTuple):
    rows: tuple[StepRow, ...]
    opened_turn: dict[str, Any] | None  # the turn record (without step_ids) a prompt opened
    read_texts: tuple[tuple[str, str], ...] = ()  # (step id, what its read returned), for the flags


_NO_STEPS = MessageSteps((), None)


def iso_at(at: int | str) -> str:
    return at if isinstance(at, str) else iso_from_ms(at)


class _StepBuilder:
    def __init__(self, context: Context, facts: SessionFacts) -> None:
        self.context = context
        self.facts = facts
        self.at = iso_at(context.at)
        self.turn_id = context.turn_id
        self.segment = context.turn_segment
        self.records: list[dict[str, Any]] = []
        self.read_texts: list[tuple[str, str]] = []

    def add(
        self,
        step_id: str,
        step_type: str,
        payload: dict[str, Any],
        *,
        decision: str = "n/a",
        outcome: str = "ok",
        content_status: str = "inline",
        error: dict[str, str] | None = None,
        read_text: str | None = None,
    ) -> None:
        if read_text and may_hold_secrets(read_text):
            # Only a text some secret rule may match is handed over (and kept in the mapping
            # cache): for any other the flags are the same without it.
            self.read_texts.append((step_id, read_text))
        record: dict[str, Any] = {
            "id": step_id,
            "session_id": self.facts.session_id,
            "segment_index": self.segment,
            "turn_id": self.turn_id,
            "actor_id": self.facts.actor_id,
            "seq": self.context.seq + len(self.records),
            "at": self.at,
            "type": step_type,
            "decision": decision,
            "outcome": outcome,
            "content_status": content_status,
            "channels": list(CHANNELS),
            "flags": [],
            "payload": payload,
        }
        if error is not None:
            record["error"] = error
        self.records.append(record)

    def rows(self, position: int) -> tuple[StepRow, ...]:
        try:
            return tuple([StepRow.build(record) for record in self.records])
        except orjson.JSONEncodeError as exc:  # e.g. nested deeper than orjson writes
            raise wrong_shape(self.facts.where, f"messages[{position}]", str(exc)) from None
        except SchemaError as exc:  # a shape this mapping does not foresee: never a crash
            raise wrong_shape(self.facts.where, f"messages[{position}]", exc.problems[0]) from None


def map_message(
    message: Message,
    raw: dict[str, Any],
    blocks: list[dict[str, Any]],
    results: dict[int, dict[str, Any]],
    context: Context,
    facts: SessionFacts,
) -> MessageSteps:
    """The steps of one message (its JSON ``raw`` and content ``blocks``); ``results`` maps a
    call's block to its result block."""
    if len(context.bound) == len(blocks):
        return _NO_STEPS  # every block answers a call (the usual user message): part of the calls' steps
    steps = _StepBuilder(context, facts)
    metadata = raw.get("metadata")
    texts = {
        index: block["text"]
        for index, block in enumerate(blocks)
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    }
    user_texts = {index: unwrap(text) for index, text in texts.items()} if message.role == "user" else {}
    synthetic = bool(user_texts) and is_synthetic(metadata, next(iter(texts.values())))
    opened_turn: dict[str, Any] | None = None
    opens_turns = facts.actor_id == ROOT_ACTOR  # a helper's task is a message, not a turn
    if opens_turns and not synthetic and any(prompt_text(text) for text in user_texts.values()):
        opened_turn = _open_turn(raw, context, facts, list(user_texts.values()), steps.at)
        steps.turn_id, steps.segment = opened_turn["id"], opened_turn["segment_index"]
    shows_error = message.role == "assistant" and isinstance(metadata, dict) and metadata.get("displayRole") == "error"
    tool_keys = dict(context.tool_keys)
    prefix = facts.id_prefix
    for index, block in enumerate(blocks):
        kind = block.get("type")
        step_id = f"{prefix}{context.key}#{index}"
        if index in tool_keys:
            for draft in map_tool_call(block["name"], block.get("input"), results.get(index), facts.tools):
                steps.add(
                    f"{prefix}{tool_keys[index]}#{draft.part}",
                    draft.type,
                    draft.payload,
                    decision=draft.decision,
                    outcome=draft.outcome,
                    content_status=draft.content_status,
                    error=draft.error,
                    read_text=draft.read_text,
                )
        elif kind == "text" and message.role == "user":
            _user_text(steps, step_id, user_texts.get(index), synthetic)
        elif kind == "text":
            _assistant_text(steps, step_id, texts.get(index), shows_error)
        elif kind == "thinking":
            thinking = block.get("thinking")
            steps.add(
                step_id, "message", {"role": "thinking", **({"text": thinking} if isinstance(thinking, str) else {})}
            )
        elif kind == "tool_result" and index in context.bound:
            continue  # part of the steps of the call it answers
        else:
            name = f"block:{kind}" if isinstance(kind, str) and kind else "block:unknown"
            steps.add(step_id, "other", {"tool_name": name, "raw": {"block": block}})
    return MessageSteps(steps.rows(message.position), opened_turn, tuple(steps.read_texts))


def system_message(step_id: str, text: str, context: Context, facts: SessionFacts) -> StepRow:
    """One ``system`` message step that no message of the transcript holds (the compaction summary)."""
    steps = _StepBuilder(context, facts)
    steps.add(step_id, "message", {"role": "system", "text": text})
    return steps.rows(0)[0]


def _user_text(steps: _StepBuilder, step_id: str, user_text: UserText | None, synthetic: bool) -> None:
    payload: dict[str, Any] = {"role": "system" if synthetic else "user"}
    if user_text is not None:
        payload["text"] = user_text.inner if synthetic else prompt_text(user_text)
    steps.add(step_id, "message", payload)


def _assistant_text(steps: _StepBuilder, step_id: str, text: str | None, shows_error: bool) -> None:
    payload: dict[str, Any] = {"role": "error" if shows_error else "assistant"}
    if text is not None:
        payload["text"] = text
    if shows_error:
        # An API failure or a dropped stream that Cline showed as an error.
        steps.add(step_id, "message", payload, outcome="failed", error={"type": "cline_error", "message": text or ""})
    else:
        steps.add(step_id, "message", payload)


def _open_turn(
    raw: dict[str, Any], context: Context, facts: SessionFacts, texts: list[UserText], at: str
) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "id": f"turn:{context.next_turn}",
        "session_id": facts.session_id,
        "segment_index": context.next_turn_segment,
        "actor_id": ROOT_ACTOR,
        "index": context.next_turn,
        "started_at": at,
    }
    prompt_id = raw.get("id")
    if isinstance(prompt_id, str) and prompt_id:
        turn["prompt_id"] = prompt_id
    mode = next((text.mode for text in texts if text.mode is not None), None)
    if mode is not None:
        turn["mode"] = mode
    return turn
