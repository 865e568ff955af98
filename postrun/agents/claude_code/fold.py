"""A transcript folded record by record: the state after a prefix of the file, extended by
the records that follow it. Claude Code only appends, so a live transcript is folded once:
each ingest folds only the new lines, onto the state the last one left (``Fold``).

A fold's entries are the transcript's steps in file order (a line's blocks in order). A
``tool_result`` completes the entry of its earlier ``tool_use``; every other record only
adds. The main transcript's fold also opens turns (each prompt) and segments (each
invocation: the first timestamped record after a ``cost-state``, or the queued prompt of a
resume that repairs a killed invocation's end), and keeps the session's times, usage (per API
response, ``message.id``) and last reported cost.

A ``Fold`` is never changed once made: folding more copies its lists first, so the state an
earlier ingest left stays valid whatever happens to the next one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from postrun.agents.claude_code.blocks import pieces
from postrun.agents.claude_code.results import MISSING, Call, Result
from postrun.agents.claude_code.text import LARGEST, has_tool_results, is_prompt, text_field, text_of, timestamp
from postrun.agents.claude_code.tools import read_text
from postrun.records import StepRow
from postrun.review.secrets import may_hold_secrets

ROOT_ACTOR = "root"
Usage = tuple[int, int, int, int]  # input, output, cache read, cache creation tokens
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_NO_USAGE: Usage = (0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    text: str | None


@dataclass(frozen=True, slots=True)
class Block:
    """An assistant block of a kind without a step type of its own (kept as it is)."""

    block: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Entry:
    """One step of a transcript: what it is, where it was written, and its row once built.

    ``row`` is the step as the last mapping placed it; ``built`` is what it was built under
    (whether its process had ended, the actor it spawned, the session's start for a step
    without a time of its own), so the mapping builds it again only when one changed.
    """

    id: str
    body: Message | Block | Call
    at: str | None
    turn: int  # main transcript: the turn it is in (0: before the first prompt); sub-agents: 0
    segment: int
    row: StepRow | None = None
    built: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Facts:
    """What a transcript says of its session, as far as it was folded."""

    cost_usd: float | None = None  # the last ``cost-state``'s total
    last_is_cost: bool = False  # the last record is a ``cost-state`` (the invocation exited)
    after_cost: bool = False  # a ``cost-state`` came, and no timestamped record since
    unclosed: bool = False  # a message line came, and no ``cost-state`` since
    enqueued: tuple[str, str | None] | None = None  # a prompt queued since: its time, the time before
    earliest: tuple[datetime, str] | None = None
    latest: tuple[datetime, str] | None = None
    last_at: str | None = None  # the last timestamp (a step without one takes it)
    version: str | None = None  # of the first message record
    cwd: str | None = None  # of the first ``user`` line
    branch: str | None = None  # of the first ``user`` line
    model: str | None = None  # of the last model-written assistant line
    prompt_id: str | None = None  # of the first line that has one (a sub-agent's placement)


@dataclass(frozen=True, slots=True)
class Fold:
    """The state after folding a transcript's first ``end`` bytes."""

    actor_id: str
    main: bool
    end: int = 0
    entries: list[Entry] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # tool_use id -> its entry
    ids: dict[str, int] = field(default_factory=dict)  # step ids used -> how often (to keep them unique)
    turns: list[dict[str, Any]] = field(default_factory=list)  # opened turns (main), without step ids
    segments: list[dict[str, Any]] = field(default_factory=lambda: [{"index": 0, "start_reason": "start"}])
    usage: dict[str, Usage | None] = field(default_factory=dict)  # message.id -> its last usage
    tokens: Usage = _NO_USAGE  # the sum of ``usage``
    facts: Facts = field(default_factory=lambda: Facts())
    read_texts: dict[str, str] = field(default_factory=dict)  # step id -> a Read's text, if a secret rule may match it
    skipped: int = 0  # lines that are not JSON objects
    records: int = 0  # lines that are Claude Code's records (see ``_is_record``)
    session_lines: int = 0  # ``user`` and ``assistant`` lines, and records naming a session (``sessionId``)
    touched: tuple[int, ...] = ()  # entries of the fold it extended that it changed (a result came)

    def with_rows(self, changed: dict[int, Entry]) -> Fold:
        """This fold with some entries built again (their rows set), as the next one extends it."""
        if not changed and not self.touched:
            return self
        entries = list(self.entries)
        for index, entry in changed.items():
            entries[index] = entry
        return replace(self, entries=entries, touched=())


def fold_records(fold: Fold, records: Iterable[tuple[int, dict[str, Any]]], end: int, skipped: int = 0) -> Fold:
    """``fold`` extended by ``records`` (offset, object), which end at byte ``end``."""
    work = _Work(fold)
    for offset, record in records:
        work.take(offset, record)
    return work.done(end, skipped)


# The kinds of line only Claude Code writes without a ``sessionId`` (it puts one on every other).
_OWN_KINDS = frozenset(
    {"user", "assistant", "attachment", "system", "summary", "cost-state", "queue-operation", "file-history-snapshot"}
)


def _is_record(kind: str, record: dict[str, Any]) -> bool:
    """A line Claude Code wrote: what makes a file its transcript. Another agent's JSONL with
    a ``type`` on each line (a Codex rollout named by mistake) has none, and is refused
    rather than stored as an empty session (README: bad input is one line)."""
    return kind in _OWN_KINDS or "sessionId" in record


class _Work:
    """A fold being extended: copies of the fold's containers, changed record by record."""

    def __init__(self, fold: Fold) -> None:
        self.fold = fold
        self.entries = list(fold.entries)
        self.calls = dict(fold.calls)
        self.ids = dict(fold.ids)
        self.turns = list(fold.turns)
        self.segments = [dict(segment) for segment in fold.segments]
        self.usage = dict(fold.usage)
        self.tokens = list(fold.tokens)
        self.read_texts = dict(fold.read_texts)
        self.before = len(fold.entries)
        self.records = 0
        self.session_lines = 0
        self.touched: list[int] = []
        self.facts: dict[str, Any] = {name.name: getattr(fold.facts, name.name) for name in fields(Facts)}
        self.prefix = "" if fold.main else f"{fold.actor_id}/"

    def done(self, end: int, skipped: int) -> Fold:
        tokens: Usage = (self.tokens[0], self.tokens[1], self.tokens[2], self.tokens[3])
        return replace(
            self.fold,
            end=end,
            entries=self.entries,
            calls=self.calls,
            ids=self.ids,
            turns=self.turns,
            segments=self.segments,
            usage=self.usage,
            tokens=tokens,
            read_texts=self.read_texts,
            skipped=self.fold.skipped + skipped,
            records=self.fold.records + self.records,
            session_lines=self.fold.session_lines + self.session_lines,
            touched=tuple(sorted(set(self.touched))),
            facts=Facts(**self.facts),
        )

    # -- records ------------------------------------------------------------------------

    def take(self, offset: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if not isinstance(kind, str):
            return  # not a record of any kind
        if _is_record(kind, record):
            self.records += 1
        if kind in ("user", "assistant") or "sessionId" in record:
            self.session_lines += 1
        facts = self.facts
        if kind == "cost-state":
            if self.fold.main:
                self._cost_state(record)
            return
        facts["last_is_cost"] = False
        at = timestamp(record)
        queued = kind == "queue-operation" and record.get("operation") == "enqueue"
        if queued and at is not None and facts["unclosed"] and facts["enqueued"] is None:
            facts["enqueued"] = (at, self.segments[-1].get("last_at"))
        if at is not None:
            self._time(at)
        if kind in ("user", "assistant", "attachment", "system"):
            if facts["version"] is None:
                facts["version"] = text_field(record.get("version"))
            if facts["prompt_id"] is None:
                facts["prompt_id"] = text_field(record.get("promptId"))
        if kind == "user":
            self._user(offset, record, at)
        elif kind == "assistant":
            self._assistant(offset, record, at)
        # Every other kind (requests replayed, attachments, queue operations, modes, ...) adds no step.

    def _time(self, at: str) -> None:
        facts = self.facts
        if facts["after_cost"]:
            # The first timestamped record after a ``cost-state``: the next invocation (a resume).
            self.segments[-1]["ended_at"] = self.segments[-1].get("last_at")
            self.segments.append({"index": len(self.segments), "start_reason": "resume", "started_at": at})
            facts["after_cost"] = False
        self.segments[-1]["last_at"] = at
        facts["last_at"] = at
        moment = _instant(at)
        if moment is None:
            return
        if facts["earliest"] is None or moment < facts["earliest"][0]:
            facts["earliest"] = (moment, at)
        if facts["latest"] is None or moment > facts["latest"][0]:
            facts["latest"] = (moment, at)

    def _cost_state(self, record: dict[str, Any]) -> None:
        cost = record.get("totalCostUSD")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
            # Cumulative for the whole session, across resumes: the last one is the total.
            self.facts["cost_usd"] = float(cost)
        self.facts["last_is_cost"] = True
        self.facts["after_cost"] = True
        self.facts["unclosed"] = False

    def _message_line(self, repair: bool) -> None:
        """A message line of the main transcript. A resumed process first repairs what a killed
        one left open (a call with no result, a turn with no reply) with lines of its own: when
        no ``cost-state`` closed the last invocation, the prompt queued before the repair opens
        the next segment (the killed invocation wrote no end)."""
        facts = self.facts
        if not self.fold.main:
            return
        if repair and facts["unclosed"] and facts["enqueued"] is not None:
            at, before = facts["enqueued"]
            last = self.segments[-1]
            last["ended_at"] = before
            self.segments.append(
                {"index": len(self.segments), "start_reason": "resume", "started_at": at, "last_at": last["last_at"]}
            )
            last["last_at"] = before
            facts["unclosed"] = False
        elif not repair:
            facts["unclosed"] = True
        facts["enqueued"] = None

    def _user(self, offset: int, record: dict[str, Any], at: str | None) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        facts = self.facts
        if facts["cwd"] is None and self.fold.main:
            facts["cwd"] = text_field(record.get("cwd"))
            facts["branch"] = text_field(record.get("gitBranch"))
        line_id = self._line_id(record, offset)
        self._message_line(record.get("toolDenialKind") == "interrupted")
        if isinstance(content, list) and has_tool_results(content):
            blocks = [block for block in content if isinstance(block, dict)]
            answers = [block for block in blocks if block.get("type") == "tool_result"]
            alone = len(answers) == 1  # the line's own fields speak of its one result
            for block in answers:
                self._answer(block, record if alone else None)
            text = text_of(blocks)
            if text is not None:
                self._add(line_id, Message("system", text), at)
            return
        text = text_of(content)
        if text is None and not isinstance(content, (str, list)):
            return
        if self.fold.main and is_prompt(record, text):
            turn = len(self.turns) + 1
            opened: dict[str, Any] = {"id": f"turn:{turn}", "index": turn, "segment_index": len(self.segments) - 1}
            prompt_id = text_field(record.get("promptId"))
            if prompt_id is not None:
                opened["prompt_id"] = prompt_id
            opened["mode"] = "plan" if record.get("permissionMode") == "plan" else "act"
            opened["at"] = at
            self.turns.append(opened)
            self._add(line_id, Message("user", text), at)
        else:
            # Injected by Claude Code (a notice, a summary, a command's output), or in a
            # sub-agent's transcript the prompt its parent wrote.
            self._add(line_id, Message("system", text), at)

    def _assistant(self, offset: int, record: dict[str, Any], at: str | None) -> None:
        message = record.get("message")
        if not isinstance(message, dict):
            return
        model = text_field(message.get("model"))
        # Written by Claude Code itself (a filler reply, an API error's notice): no API response.
        synthetic = model == "<synthetic>"
        self._message_line(synthetic and record.get("isApiErrorMessage") is not True)
        # A forked session begins with copies of its parent's lines: a copied response
        # (``requestSessionId`` names the parent) is counted in the parent's figures alone.
        copied = record.get("requestSessionId") not in (None, record.get("sessionId"))
        if synthetic:
            model = None
        elif not copied:
            self._usage(message)
        if model is not None:
            self.facts["model"] = model
        line_id = self._line_id(record, offset)
        cwd = text_field(record.get("cwd"))
        first = True  # the line's first step that is not a call takes the line's id
        for piece in pieces(message.get("content")):
            if piece.kind == "call":
                self._call(piece.block, line_id, piece.index, cwd, at)
                continue
            step_id = line_id if first else f"{line_id}#{piece.index}"
            role = "system" if synthetic and piece.role == "assistant" else piece.role
            self._add(step_id, Message(role, piece.text) if role else Block(piece.block), at)
            first = False

    def _usage(self, message: dict[str, Any]) -> None:
        message_id = message.get("id")
        if not isinstance(message_id, str) or not message_id:
            return
        found = message.get("usage")
        usage: Usage | None = None
        if isinstance(found, dict):
            counts = [_count(found.get(key)) for key in _USAGE_KEYS]
            usage = (counts[0], counts[1], counts[2], counts[3])
        old = self.usage.get(message_id)
        # Every line of one API response carries its usage: the last line's counts, once.
        self.usage[message_id] = usage
        for position in range(4):
            self.tokens[position] += (usage or _NO_USAGE)[position] - (old or _NO_USAGE)[position]

    def _call(self, block: dict[str, Any], line_id: str, index: int, cwd: str | None, at: str | None) -> None:
        tool_id = block.get("id")
        name = block.get("name")
        base = tool_id if isinstance(tool_id, str) and tool_id else f"{line_id}#{index}"
        step_id = self._unique(self.prefix + base)
        call = Call(step_id, base, name if isinstance(name, str) and name else "unknown", block.get("input"), cwd)
        self.calls[base] = len(self.entries)
        self._append(Entry(step_id, call, at, len(self.turns), len(self.segments) - 1))

    def _answer(self, block: dict[str, Any], line: dict[str, Any] | None) -> None:
        tool_id = block.get("tool_use_id")
        index = self.calls.get(tool_id) if isinstance(tool_id, str) else None
        if index is None:
            return  # an answer to a call this transcript does not hold
        entry = self.entries[index]
        call = entry.body
        if not isinstance(call, Call) or call.result is not None:
            return  # the first answer counts
        if line is None:
            result = Result(block)
        else:
            result = Result(
                block,
                line.get("toolUseResult", MISSING),
                line.get("permissionDecision", MISSING),
                line.get("toolDenialKind", MISSING),
            )
        answered = replace(call, result=result)
        self.entries[index] = replace(entry, body=answered, row=None, built=())
        if index < self.before:
            self.touched.append(index)
        text = read_text(answered)
        if text and may_hold_secrets(text):  # a text no secret rule can match gives no flag: not kept
            self.read_texts[entry.id] = text

    # -- steps --------------------------------------------------------------------------

    def _line_id(self, record: dict[str, Any], offset: int) -> str:
        uuid = text_field(record.get("uuid"))
        return uuid if uuid is not None else f"@{offset}"  # the line's place: stable, the file only grows

    def _unique(self, step_id: str) -> str:
        seen = self.ids.get(step_id, 0)
        self.ids[step_id] = seen + 1
        return step_id if seen == 0 else f"{step_id}#{seen + 1}"

    def _add(self, base: str, body: Message | Block, at: str | None) -> None:
        step_id = self._unique(self.prefix + base)
        self._append(Entry(step_id, body, at, len(self.turns), len(self.segments) - 1))

    def _append(self, entry: Entry) -> None:
        if entry.at is None:
            entry = replace(entry, at=self.facts["last_at"])
        self.entries.append(entry)


def _count(value: Any) -> int:
    return value if type(value) is int and 0 <= value <= LARGEST else 0


def _instant(at: str) -> datetime | None:
    try:
        return datetime.fromisoformat(at)
    except ValueError:
        return None
