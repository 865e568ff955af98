"""The cheap whole-transcript pass that runs on every ingest.

It checks the document's shape, fingerprints every message, gives every message and
tool call a unique id base, pairs each ``tool_use`` with its ``tool_result`` and
sums the metrics. It builds no steps: that is the expensive part, which the
mapping only does for messages that changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import orjson

from postrun.agents.cline.results import APPROVAL_ON_WORDINGS, error_reports
from postrun.agents.cline.times import epoch_ms
from postrun.errors import SourceError

ROLES = ("user", "assistant")  # Cline stores no other roles; anything else is skipped
TOKEN_KEYS = (
    ("input", "inputTokens"),
    ("output", "outputTokens"),
    ("cache_read", "cacheReadTokens"),
    ("cache_creation", "cacheWriteTokens"),
)
BlockRef = tuple[int, int]  # (message position, block position)
# A message's JSON as (length, hash). Python's keyed 64-bit hash is many times faster
# than a cryptographic digest and only compared within one process, like the cache.
Fingerprint = tuple[int, int]


def wrong_shape(where: str, path: str, what: str) -> SourceError:
    return SourceError(where, f"wrong shape: {path}: {what}")


@dataclass(slots=True)
class Message:
    position: int  # in the file's message list
    raw: dict[str, Any]
    role: str
    blocks: list[dict[str, Any]]
    fingerprint: Fingerprint
    ts: int | None  # valid epoch milliseconds, when the message has them
    key: str = ""  # unique id base of its non-tool steps
    tool_keys: list[tuple[int, str]] = field(default_factory=list)  # (block, unique id base) per call
    answers: dict[int, BlockRef] = field(default_factory=dict)  # tool_use block -> its tool_result
    bound: list[int] = field(default_factory=list)  # its tool_result blocks that answer a call


@dataclass(slots=True)
class Metrics:
    requests: int = 0  # assistant messages that carry metrics
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys((name for name, _ in TOKEN_KEYS), 0))
    costs: list[float] = field(default_factory=list)

    def add(self, metrics: dict[str, Any]) -> None:
        self.requests += 1
        for name, key in TOKEN_KEYS:
            self.tokens[name] += _count(metrics.get(key))
        cost = metrics.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost) and cost > 0:
            self.costs.append(float(cost))

    def record(self) -> dict[str, Any] | None:
        """Summed as stored (``inputTokens`` already includes the cache); None without any."""
        if not self.requests:
            return None
        return {"cost_usd": math.fsum(self.costs), "api_requests": self.requests, "tokens": dict(self.tokens)}


def _count(value: Any) -> int:
    if type(value) is int:
        return max(value, 0)
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return max(int(value), 0)
    return 0


@dataclass(slots=True)
class Transcript:
    document: dict[str, Any]
    messages: list[Message] = field(default_factory=list)  # user and assistant messages, in order
    by_position: dict[int, Message] = field(default_factory=dict)
    earliest_ms: int | None = None
    metrics: Metrics = field(default_factory=Metrics)
    model_info: dict[str, Any] = field(default_factory=dict)  # of the last assistant message with one
    approval_refused: bool = False  # an error shows approval was on (matters for CLI sessions)


class _UniqueIds:
    """Id bases that stay unique when an id repeats (``call_0`` in every run of some models)."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def __call__(self, raw_id: str) -> str:
        # "#" separates an id from a position: escaping it keeps every step id unique.
        base = raw_id.replace("%", "%25").replace("#", "%23")
        count = self._seen.get(base, 0) + 1
        self._seen[base] = count
        return base if count == 1 else f"{base}#{count}"


def read_transcript(document: Any, where: str) -> Transcript:
    """Raises ``SourceError`` (``wrong shape: …``) for a document that cannot be mapped."""
    if isinstance(document, list):
        document = {"messages": document}  # older files: a bare list of messages
    if not isinstance(document, dict):
        raise wrong_shape(where, "top level", "expected an object or a list")
    raw_messages = document.get("messages")
    if not isinstance(raw_messages, list):
        raise wrong_shape(where, "messages", "required" if raw_messages is None else "expected a list")
    transcript = Transcript(document)
    unique = _UniqueIds()
    waiting: dict[str, list[BlockRef]] = {}  # tool_use id -> calls not answered yet
    for position, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise wrong_shape(where, f"messages[{position}]", "expected an object")
        role = raw.get("role")
        if role not in ROLES:
            continue
        blocks = _blocks(raw.get("content"), where, position)
        try:
            fingerprint = _fingerprint(orjson.dumps(raw))
        except orjson.JSONEncodeError as exc:  # e.g. nested deeper than orjson writes
            raise wrong_shape(where, f"messages[{position}]", str(exc)) from None
        message = Message(position, raw, role, blocks, fingerprint, epoch_ms(raw.get("ts")))
        message_id = raw.get("id")
        message.key = unique(message_id) if isinstance(message_id, str) and message_id else f"#{position}"
        _note_facts(transcript, message)
        transcript.messages.append(message)
        transcript.by_position[position] = message
        for index, block in enumerate(message.blocks):
            kind = block.get("type")
            if kind == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if isinstance(call_id, str) and call_id and isinstance(name, str) and name:
                    message.tool_keys.append((index, unique(call_id)))
                    waiting.setdefault(call_id, []).append((position, index))
            elif kind == "tool_result":
                answered = block.get("tool_use_id")
                calls = waiting.get(answered) if isinstance(answered, str) else None
                if calls:
                    # The latest unanswered call with that id: ids can repeat in a session.
                    call_position, call_block = calls.pop()
                    transcript.by_position[call_position].answers[call_block] = (position, index)
                    message.bound.append(index)
                if not transcript.approval_refused:
                    transcript.approval_refused = any(
                        wording in report for report in error_reports(block) for wording in APPROVAL_ON_WORDINGS
                    )
    return transcript


def _fingerprint(blob: bytes) -> Fingerprint:
    return len(blob), hash(blob)


def _note_facts(transcript: Transcript, message: Message) -> None:
    if message.ts is not None and (transcript.earliest_ms is None or message.ts < transcript.earliest_ms):
        transcript.earliest_ms = message.ts
    if message.role == "assistant":
        metrics = message.raw.get("metrics")
        if isinstance(metrics, dict):
            transcript.metrics.add(metrics)
        model_info = message.raw.get("modelInfo")
        if isinstance(model_info, dict):
            transcript.model_info = model_info


def _blocks(content: Any, where: str, position: int) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise wrong_shape(where, f"messages[{position}].content", "expected a list or a string")
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            raise wrong_shape(where, f"messages[{position}].content[{index}]", "expected an object")
    return content
