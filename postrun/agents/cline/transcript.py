"""The cheap whole-transcript pass that runs on every ingest.

It checks the document's shape, fingerprints every message, gives every message and
tool call a unique id base, pairs each ``tool_use`` with its ``tool_result`` and
sums the metrics. It builds no steps: that is the expensive part, which the
mapping only does for messages that changed.

Cline rewrites a session's file with messages appended. A pass can therefore resume
where the last pass over the same session ended (``TranscriptResume``): when every
message that pass saw is still there, unchanged, only the new messages are walked; the
earlier ones are taken as they were. Unchanged means the same bytes in the file (see
``layout``) when the last pass knew where its messages lay in its file, else the same
fingerprints. Anything else (a message changed, removed or inserted) is a full pass.
Both give the same transcript.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from postrun.agents.cline.layout import ByteLayout, KnownMessages, LazyMessages, measure_list
from postrun.agents.cline.metrics import Metrics
from postrun.agents.cline.results import error_reports, shows_approval_on
from postrun.errors import SourceError
from postrun.jsonio import parse_json
from postrun.timestamps import epoch_ms

ROLES = ("user", "assistant")  # Cline stores no other roles; anything else is skipped
BlockRef = tuple[int, int]  # (message position, block position)
# A message's JSON as (length, hash). Python's keyed 64-bit hash is many times faster
# than a cryptographic digest and only compared within one process, like the cache.
Fingerprint = tuple[int, int]


def wrong_shape(where: str, path: str, what: str) -> SourceError:
    return SourceError(where, f"wrong shape: {path}: {what}")


# Made for every message (a NamedTuple: built several times faster than a frozen dataclass).
class Message(NamedTuple):
    """What the pass found about one user or assistant message.

    Everything here depends on the message and those before it only, so it stays true
    when messages are appended. Which results answer its calls is in
    ``Transcript.answers`` (a later message can add one); its JSON and blocks are read
    from the current document (``Transcript.raw`` and ``Transcript.blocks``).
    """

    number: int  # its place in ``Transcript.messages``
    position: int  # in the file's message list
    role: str
    fingerprint: Fingerprint
    ts: int | None  # valid epoch milliseconds, when the message has them
    key: str  # unique id base of its non-tool steps
    tool_keys: tuple[tuple[int, str], ...]  # (block, unique id base) per call
    bound: tuple[int, ...]  # its tool_result blocks that answer a call


@dataclass(slots=True)
class Transcript:
    # Its ``messages`` holds only those after the known ones when the file was parsed without them.
    document: dict[str, Any]
    raw_messages: Sequence[Any] = field(default_factory=list)  # the file's message list, as parsed
    messages: list[Message] = field(default_factory=list)  # user and assistant messages, in order
    by_position: dict[int, Message] = field(default_factory=dict)
    # message position -> {its tool_use block -> the tool_result answering it}. The inner
    # dicts are never changed once stored (a resumed pass shares them): replace them.
    answers: dict[int, Mapping[int, BlockRef]] = field(default_factory=dict)
    earliest_ms: int | None = None
    metrics: Metrics = field(default_factory=Metrics)
    model_info: dict[str, Any] = field(default_factory=dict)  # of the last assistant message with one
    approval_refused: bool = False  # an error shows approval was on (matters for CLI sessions)
    # The first message (index in ``messages``) that a resumed pass did not take as it
    # was: a new one, or an earlier one whose call got its result. 0 after a full pass.
    first_changed: int = 0
    resume: TranscriptResume | None = None  # where the next pass may start

    def raw(self, message: Message) -> dict[str, Any]:
        raw: dict[str, Any] = self.raw_messages[message.position]
        return raw

    def blocks(self, message: Message) -> list[dict[str, Any]]:
        """The message's content blocks (a string content is one text block)."""
        return _normalized_blocks(self.raw(message).get("content"))


@dataclass(frozen=True, slots=True)
class TranscriptResume:
    """The state at the end of a pass, for the next pass over the same session.

    Valid in the process that made it only (fingerprints use Python's keyed hash).
    Holds no part of the parsed document but ``model_info``; ``layout`` holds the file's bytes.
    """

    fingerprints: tuple[Fingerprint | None, ...]  # every message of the file by position (None: not an object)
    messages: tuple[Message, ...]
    by_position: Mapping[int, Message]  # ``messages`` by position: copied, not built again, by the next pass
    answers: Mapping[int, Mapping[int, BlockRef]]
    seen_ids: Mapping[str, int]
    waiting: Mapping[str, tuple[BlockRef, ...]]
    earliest_ms: int | None
    metrics: Metrics
    model_info: dict[str, Any]
    approval_refused: bool
    layout: ByteLayout | None = None  # where the messages lay in the file's bytes


class _Pass:
    """One walk over a document's messages, from its start or resumed."""

    def __init__(self, transcript: Transcript, where: str) -> None:
        self.transcript = transcript
        self.where = where
        self.seen_ids: dict[str, int] = {}
        self.waiting: dict[str, list[BlockRef]] = {}  # tool_use id -> calls not answered yet
        self.fingerprints: list[Fingerprint | None] = []

    def unique(self, raw_id: str) -> str:
        """An id base that stays unique when an id repeats (``call_0`` in every run of some models)."""
        base = escape_id(raw_id)
        count = self.seen_ids.get(base, 0) + 1
        self.seen_ids[base] = count
        return base if count == 1 else f"{base}#{count}"

    def restore(self, resume: TranscriptResume) -> None:
        transcript = self.transcript
        transcript.messages = list(resume.messages)
        transcript.by_position = dict(resume.by_position)
        transcript.answers = dict(resume.answers)
        transcript.earliest_ms = resume.earliest_ms
        transcript.metrics = resume.metrics.copy()
        transcript.model_info = resume.model_info
        transcript.approval_refused = resume.approval_refused
        transcript.first_changed = len(resume.messages)
        self.seen_ids = dict(resume.seen_ids)
        self.waiting = {call_id: list(calls) for call_id, calls in resume.waiting.items()}
        self.fingerprints = list(resume.fingerprints)

    def add(self, position: int, raw: Any, fingerprint: Fingerprint | None = None) -> None:
        transcript, where = self.transcript, self.where
        if not isinstance(raw, dict):
            raise wrong_shape(where, f"messages[{position}]", "expected an object")
        role = raw.get("role")
        if role not in ROLES:
            # Skipped, but fingerprinted when it can be: a later pass must see it unchanged.
            self.fingerprints.append(fingerprint or _fingerprint_or_none(raw))
            return
        blocks = _blocks(raw.get("content"), where, position)
        if fingerprint is None:
            try:
                fingerprint = _fingerprint(orjson.dumps(raw))
            except orjson.JSONEncodeError as exc:  # e.g. nested deeper than orjson writes
                raise wrong_shape(where, f"messages[{position}]", str(exc)) from None
        self.fingerprints.append(fingerprint)
        message_id = raw.get("id")
        key = self.unique(message_id) if isinstance(message_id, str) and message_id else f"#{position}"
        tool_keys: list[tuple[int, str]] = []
        bound: list[int] = []
        for index, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if isinstance(call_id, str) and call_id and isinstance(name, str) and name:
                    tool_keys.append((index, self.unique(call_id)))
                    self.waiting.setdefault(call_id, []).append((position, index))
            elif kind == "tool_result":
                answered = block.get("tool_use_id")
                calls = self.waiting.get(answered) if isinstance(answered, str) else None
                if calls:
                    # The latest unanswered call with that id: ids can repeat in a session.
                    self._answer(calls.pop(), (position, index))
                    bound.append(index)
                if not transcript.approval_refused:
                    transcript.approval_refused = any(shows_approval_on(report) for report in error_reports(block))
        message = Message(
            len(transcript.messages),
            position,
            role,
            fingerprint,
            epoch_ms(raw.get("ts")),
            key,
            tuple(tool_keys),
            tuple(bound),
        )
        _note_facts(transcript, message, raw)
        transcript.messages.append(message)
        transcript.by_position[position] = message

    def _answer(self, call: BlockRef, answer: BlockRef) -> None:
        transcript = self.transcript
        call_position, call_block = call
        transcript.answers[call_position] = {**transcript.answers.get(call_position, {}), call_block: answer}
        called = transcript.by_position.get(call_position)
        if called is not None:  # else the call is in the message being added: it is new anyway
            transcript.first_changed = min(transcript.first_changed, called.number)

    def finish(self, layout: ByteLayout | None) -> None:
        transcript = self.transcript
        transcript.resume = TranscriptResume(
            fingerprints=tuple(self.fingerprints),
            messages=tuple(transcript.messages),
            by_position=dict(transcript.by_position),
            answers=dict(transcript.answers),
            seen_ids=self.seen_ids,
            waiting={call_id: tuple(calls) for call_id, calls in self.waiting.items() if calls},
            earliest_ms=transcript.earliest_ms,
            metrics=transcript.metrics.copy(),
            model_info=transcript.model_info,
            approval_refused=transcript.approval_refused,
            layout=layout,
        )


def read_transcript(
    document: Any,
    where: str,
    resume: TranscriptResume | None = None,
    data: bytes | None = None,
    known: KnownMessages | None = None,
) -> Transcript:
    """The transcript of a messages document; ``resume`` is the last pass's ``Transcript.resume``.

    ``data``, the bytes the document was parsed from, is for a document that will likely be
    read again: the pass notes where its messages lie in them, so that the next one can
    prove them unchanged with one compare. ``known`` says the document was parsed without
    the messages of ``resume``'s layout (``parse_without_known``): they are taken as they were.

    Raises ``SourceError`` (``wrong shape: …``) for a document that cannot be mapped.
    """
    if known is not None:
        if resume is not None and resume.layout is known.last:
            return _read_after_known(document, where, resume, known)
        document = parse_json(known.layout.data, where, "messages")  # not that pass's: read it all
        data = known.layout.data
    bare = isinstance(document, list)
    if bare:
        document = {"messages": document}  # older files: a bare list of messages
    if not isinstance(document, dict):
        raise wrong_shape(where, "top level", "expected an object or a list")
    raw_messages = document.get("messages")
    if not isinstance(raw_messages, list):
        raise wrong_shape(where, "messages", "required" if raw_messages is None else "expected a list")
    transcript = Transcript(document, raw_messages)
    walk = _Pass(transcript, where)
    layout, same_bytes = None, False
    if data is not None:
        layout, same_bytes = measure_list(data, bare, raw_messages, resume.layout if resume is not None else None)
    seen, unchanged = ([], True) if same_bytes else _known_prefix(raw_messages, resume)
    start = 0
    if resume is not None and unchanged:
        walk.restore(resume)
        start = len(resume.fingerprints)
    for position in range(start, len(raw_messages)):
        walk.add(position, raw_messages[position], seen[position] if position < len(seen) else None)
    walk.finish(layout)
    return transcript


def _read_after_known(document: Any, where: str, resume: TranscriptResume, known: KnownMessages) -> Transcript:
    bare = isinstance(document, list)
    tail = document if bare else document["messages"]
    transcript = Transcript({"messages": tail} if bare else document, LazyMessages(known, tail, where))
    walk = _Pass(transcript, where)
    walk.restore(resume)
    for position in range(known.last.count, len(transcript.raw_messages)):
        walk.add(position, transcript.raw_messages[position])
    walk.finish(known.layout)
    return transcript


def escape_id(raw_id: str) -> str:
    """An id from Cline's files as part of a step id: "#" separates an id from a position, so
    escaping it keeps every step id unique."""
    return raw_id.replace("%", "%25").replace("#", "%23")


def _known_prefix(raw_messages: list[Any], resume: TranscriptResume | None) -> tuple[list[Fingerprint], bool]:
    """Fingerprints of the leading messages, taken while comparing them with the last pass's,
    and whether every message the last pass saw is still there, unchanged."""
    if resume is None or len(raw_messages) < len(resume.fingerprints):
        return [], False
    found: list[Fingerprint] = []
    dumps = orjson.dumps  # the loop runs over every message of a live session: kept tight
    for raw, seen in zip(raw_messages, resume.fingerprints, strict=False):
        if seen is None or not isinstance(raw, dict):
            return found, False  # the full pass reports or skips it
        try:
            blob = dumps(raw)
        except orjson.JSONEncodeError:
            return found, False
        fingerprint = (len(blob), hash(blob))
        found.append(fingerprint)  # computed already: a full pass reuses it
        if fingerprint != seen:
            return found, False
    return found, True


def _fingerprint(blob: bytes) -> Fingerprint:
    return len(blob), hash(blob)


def _fingerprint_or_none(raw: dict[str, Any]) -> Fingerprint | None:
    try:
        return _fingerprint(orjson.dumps(raw))
    except orjson.JSONEncodeError:
        return None


def _note_facts(transcript: Transcript, message: Message, raw: dict[str, Any]) -> None:
    if message.ts is not None and (transcript.earliest_ms is None or message.ts < transcript.earliest_ms):
        transcript.earliest_ms = message.ts
    if message.role == "assistant":
        metrics = raw.get("metrics")
        if isinstance(metrics, dict):
            transcript.metrics.add(metrics)
        model_info = raw.get("modelInfo")
        if isinstance(model_info, dict):
            transcript.model_info = model_info


def _blocks(content: Any, where: str, position: int) -> list[dict[str, Any]]:
    if isinstance(content, list):
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                raise wrong_shape(where, f"messages[{position}].content[{index}]", "expected an object")
    elif content is not None and not isinstance(content, str):
        raise wrong_shape(where, f"messages[{position}].content", "expected a list or a string")
    return _normalized_blocks(content)


def _normalized_blocks(content: Any) -> list[dict[str, Any]]:
    """Blocks of a content ``_blocks`` accepted (checked when the message was first walked)."""
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []
