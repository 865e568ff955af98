"""The fold over one rollout's lines: a thread's steps, turns, resumes and usage so far.

Codex only appends, so a thread's state after line n plus lines n+1.. is the state after
them all: ``ThreadFold.advanced`` folds just the new lines into a copy of the last state
(which stays valid: a store write that is rolled back can map from it again). A line
changes at most the entries it names, so the work is that of the new lines; the copy is
of a few dicts of references.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from postrun.agents.codex.calls import escalated, refused
from postrun.agents.codex.entries import UNPLACED, Call, Entry, Facts, Place, Task, entry_records, placed
from postrun.agents.codex.history import history_parts
from postrun.agents.codex.lines import Line
from postrun.agents.codex.meta import ThreadMeta, thread_meta
from postrun.agents.codex.usage import Usage
from postrun.agents.codex.values import decoded, mapping, text, time_from_ms, timestamp
from postrun.appendonly import Mark

CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
HISTORY = frozenset({"message", "reasoning", "web_search_call"})
TURN_ENDS = frozenset({"task_complete", "turn_aborted"})
_EPOCH = "1970-01-01T00:00:00.000Z"

Placer = Callable[["ThreadFold", "str | None"], Place]


class ThreadFold:
    """What the lines of one rollout said so far. Mutated only by the fold that owns it
    (``advanced`` works on a copy)."""

    __slots__ = (
        "after_settings", "closed", "context", "count", "current", "dirty", "ended_at", "entries", "escalations",
        "facts", "history_steps", "ids", "items_seen", "last_at", "last_prompted", "mark", "meta", "model",
        "pending", "placer", "places", "records", "resumes", "segment", "settings_at", "settings_seen", "spawns",
        "summary", "tasks", "usage",
    )  # fmt: skip

    def __init__(self) -> None:
        self.meta: ThreadMeta | None = None
        self.count = 0  # physical lines folded
        self.mark: Mark | None = None  # how far the rollout was folded: the next read starts there
        self.entries: dict[str, Entry] = {}  # in the order of each one's first line
        self.dirty: dict[str, None] = {}  # entries whose records are to be made again
        self.records: dict[str, tuple[dict[str, Any], ...]] = {}  # each entry's step records
        self.ids: dict[str, str] = {}  # a call id used twice -> the entry of its latest call
        self.tasks: dict[str, Task] = {}  # in the order they started
        self.current: str | None = None
        self.last_prompted: str | None = None
        self.segment = 0
        self.resumes: list[str] = []  # when each resume began (the root's are segments)
        self.settings_seen = 0
        self.settings_at = _EPOCH
        self.after_settings = False
        self.summary: str | None = None  # the last compaction text not yet given to its item
        self.usage = Usage()
        self.items_seen = False
        self.history_steps = False  # a history line was made a step (no item seen yet)
        self.pending: dict[str, None] = {}  # entries mapped as calls still waiting for a result
        self.escalations: list[str] = []  # calls that asked to leave the sandbox under a policy that asks
        self.spawns: dict[str, str] = {}  # entry -> the thread its spawn_agent call started
        self.ended_at: str | None = None  # the last turn end
        self.last_at: str | None = None
        self.model: str | None = None
        self.context: tuple[str | None, str | None] = (None, None)  # the last turn_context's policy and cwd
        self.places: dict[str | None, Place] = {}  # each turn's place, as its records have it
        self.closed: frozenset[str] = frozenset()  # turns over because their root turn is (children)
        self.facts = Facts("", "", "")
        self.placer: Placer = _unplaced

    def copy(self) -> ThreadFold:
        other = ThreadFold.__new__(ThreadFold)
        for name in ThreadFold.__slots__:
            value = getattr(self, name)
            setattr(other, name, value.copy() if isinstance(value, (dict, list, Usage)) else value)
        return other

    @property
    def guessed_history(self) -> bool:
        """History lines were made steps, for want of an item so far: lines with an item
        after them cannot be folded on, the rollout is to be folded again whole."""
        return self.history_steps and not self.items_seen

    @property
    def open(self) -> bool:
        """A turn of the thread has not ended."""
        return any(not task.ended for task in self.tasks.values())

    def advanced(self, lines: Sequence[Line], count: int, mark: Mark, facts: Facts, placer: Placer) -> ThreadFold:
        """A copy of this state with ``lines`` folded in (``count`` physical lines, up to
        ``mark``); ``placer`` says where a turn of this thread is in the session."""
        state = self.copy()
        state.facts = facts
        if not state.items_seen and any(map(is_item, lines)):
            # codex.md §5.1: the history is read as steps only in a rollout with no item
            # anywhere, so an item later in these lines rules out the history lines before it.
            state.items_seen = True
        with state.placing(placer):
            for line in lines:
                state.fold(line)
            state.build()
        state.count += count
        state.mark = mark
        return state

    @contextlib.contextmanager
    def placing(self, placer: Placer) -> Iterator[None]:
        """Use ``placer`` while folding; never kept (it sees the other threads of one mapping)."""
        self.placer = placer
        try:
            yield
        finally:
            self.placer = _unplaced

    # -- one line -------------------------------------------------------------------------

    def fold(self, line: Line) -> None:
        at = timestamp(line.timestamp) or self.last_at or (self.meta.started_at if self.meta else None) or _EPOCH
        self.last_at = at
        after_settings, self.after_settings = self.after_settings, False
        kind, payload = line.type, line.payload
        if kind == "session_meta":
            if self.meta is None and line.number == 0:
                self.meta = thread_meta(payload, line.timestamp)
        elif self.meta is None:
            return  # not a rollout: the mapping reports it
        elif kind == "event_msg":
            self._event(payload, line, at, after_settings)
        elif kind == "response_item":
            self._history_line(payload, line, at)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "token_usage_record":
            self.usage.count(payload, self.meta.thread_id, line.number)
        elif kind == "compacted":
            self.summary = text(payload.get("message"))

    def _event(self, payload: dict[str, Any], line: Line, at: str, after_settings: bool) -> None:
        kind = text(payload.get("type"))
        if kind == "item_completed":
            self._item(payload, line, at)
        elif kind == "task_started":
            self._task_started(payload, line, at, after_settings)
        elif kind in TURN_ENDS:
            self.ended_at = at
            turn_id = text(payload.get("turn_id")) or self.current
            if turn_id is not None:
                self._end({turn_id})
        elif kind == "thread_settings_applied":
            self.settings_seen += 1
            self.settings_at = at
            self.after_settings = True

    def _task_started(self, payload: dict[str, Any], line: Line, at: str, after_settings: bool) -> None:
        attribution = mapping(payload.get("turn_attribution"))
        turn_id = text(payload.get("turn_id")) or text(attribution.get("turn_id")) or f"line-{line.number}"
        if after_settings and self.settings_seen >= 2:
            # A new process took the thread up again: a resume. A turn it left open (killed)
            # will never end now.
            self.segment += 1
            self.resumes.append(self.settings_at)
            self._end({task.turn_id for task in self.tasks.values() if not task.ended})
        if turn_id not in self.tasks:
            policy, cwd = self.context
            self.tasks[turn_id] = Task(
                turn_id,
                line.number,
                at,
                self.segment,
                mode=text(payload.get("collaboration_mode_kind")),
                parent_turn=text(attribution.get("parent_turn_id")),
                root_turn=text(payload.get("root_turn_id")) or text(attribution.get("root_turn_id")),
                before=self.last_prompted,
                policy=policy,
                cwd=cwd,
            )
        self.current = turn_id

    def _end(self, turn_ids: set[str]) -> None:
        for turn_id in turn_ids:
            task = self.tasks.get(turn_id)
            if task is not None and not task.ended:
                self.tasks[turn_id] = task._replace(ended=True)
        for key in self.pending:
            if self.entries[key].group in turn_ids:
                self.dirty[key] = None

    def _turn_context(self, payload: dict[str, Any]) -> None:
        policy, cwd = text(payload.get("approval_policy")), text(payload.get("cwd"))
        self.context = (policy, cwd)
        self.model = text(payload.get("model")) or self.model
        turn_id = text(payload.get("turn_id")) or self.current
        task = self.tasks.get(turn_id) if turn_id is not None else None
        if task is not None:
            self.tasks[task.turn_id] = task._replace(policy=policy, cwd=cwd)

    def _item(self, payload: dict[str, Any], line: Line, at: str) -> None:
        item = payload.get("item")
        if not isinstance(item, dict):
            return
        self.items_seen = True
        item_id = text(item.get("id")) or f"line-{line.number}"
        key = self.ids.get(item_id, item_id)
        existing = self.entries.get(key)
        if existing is not None and existing.item is not None:
            key, existing = f"{item_id}@{line.number}", None  # a second item under one id: a step of its own
        kind = item.get("type")
        summary = None
        if kind == "ContextCompaction":
            summary, self.summary = self.summary, None
        group = text(payload.get("turn_id")) or self.current
        item_at = time_from_ms(payload.get("started_at_ms"))
        if existing is None:
            policy, cwd = self._turn_settings(group)
            self.entries[key] = Entry(
                key, line.number, at, group, policy, cwd, item=item, item_at=item_at, summary=summary
            )
        else:
            summary = summary or existing.summary
            self.entries[key] = existing._replace(
                group=existing.group or group, item=item, item_at=item_at, summary=summary
            )
        self.dirty[key] = None
        if kind == "UserMessage" and group is not None:
            self._prompted(group, item_id)

    def _prompted(self, group: str, prompt_id: str) -> None:
        """The turn ``group`` has its prompt: a prompted turn of the session (the root's)."""
        task = self.tasks.get(group)
        if task is None or task.prompt is not None or self.facts.prefix:
            return
        self.tasks[group] = task._replace(prompt=prompt_id)
        self.last_prompted = group
        self.repatch(group, self.placer(self, group), since=task.line)

    def _history_line(self, payload: dict[str, Any], line: Line, at: str) -> None:
        kind = text(payload.get("type"))
        if kind in CALLS:
            self._call(payload, line, at)
        elif kind in OUTPUTS:
            call_id = text(payload.get("call_id"))
            key = self.ids.get(call_id, call_id) if call_id is not None else None
            entry = self.entries.get(key) if key is not None else None
            if key is None or entry is None or entry.call is None:
                return  # no call to answer (create_goal's objective has no call id)
            output = payload.get("output")
            self.entries[key] = entry._replace(call=entry.call._replace(answered=True, output=output))
            if entry.item is None or entry.item.get("type") == "CollabAgentToolCall" or refused(output) is not None:
                self.dirty[key] = None  # a command's or a patch's item says all but a refusal
        elif kind in HISTORY:
            self._message(payload, line, at)

    def _call(self, payload: dict[str, Any], line: Line, at: str) -> None:
        call_id = text(payload.get("call_id")) or text(payload.get("id")) or f"line-{line.number}"
        kind = payload.get("type")
        if kind == "local_shell_call":
            name, arguments = "local_shell", payload.get("action")
        else:
            name = text(payload.get("name")) or "unknown"
            arguments = decoded(payload["arguments"]) if "arguments" in payload else payload.get("input")
        group = text(mapping(payload.get("internal_chat_message_metadata_passthrough")).get("turn_id")) or self.current
        key = call_id
        existing = self.entries.get(key)
        if existing is not None and existing.call is not None:
            key, existing = f"{call_id}@{line.number}", None  # a call id used again
            self.ids[call_id] = key
        call = Call(name, arguments)
        policy, cwd = self._turn_settings(group)
        if existing is None:
            self.entries[key] = Entry(key, line.number, at, group, policy, cwd, call=call)
        else:
            self.entries[key] = existing._replace(call=call, group=existing.group or group, policy=policy, cwd=cwd)
        if escalated(arguments) and policy not in (None, "never"):
            self.escalations.append(key)
        self.dirty[key] = None

    def _message(self, payload: dict[str, Any], line: Line, at: str) -> None:
        """A model-facing history line: a step of a rollout without items (its items say
        the same, and order a step by their own line)."""
        if self.items_seen or (self.meta is not None and self.meta.writes_items):
            return
        item_id = text(payload.get("id"))
        found = history_parts(payload)
        if found is None:
            return
        parts, prompt = found
        self.history_steps = True
        key = item_id or f"line-{line.number}"
        if key in self.entries:
            key = f"{key}@{line.number}"
        if prompt:
            self._legacy_turn(line, at)
        policy, cwd = self._turn_settings(self.current)
        self.entries[key] = Entry(key, line.number, at, self.current, policy, cwd, parts=parts)
        self.dirty[key] = None
        if prompt and self.current is not None:
            self._prompted(self.current, key)

    def _legacy_turn(self, line: Line, at: str) -> None:
        """A prompt of a rollout without items opens a turn (its task's, when it has one)."""
        task = self.tasks.get(self.current) if self.current is not None else None
        if task is not None and task.prompt is None:
            return
        # Such a Codex kept no task_complete: a thread runs one turn at a time, so the next
        # prompt ends the last one, and a call it left without a result never gets one (§5.3).
        self._end({task.turn_id for task in self.tasks.values() if not task.ended})
        policy, cwd = self.context
        turn_id = f"line-{line.number}"
        self.tasks[turn_id] = Task(
            turn_id, line.number, at, self.segment, before=self.last_prompted, policy=policy, cwd=cwd
        )
        self.current = turn_id

    # -- records --------------------------------------------------------------------------

    def _turn_settings(self, group: str | None) -> tuple[str | None, str | None]:
        """The approval policy and cwd of a turn (its ``turn_context``), else the last ones."""
        task = self.tasks.get(group) if group is not None else None
        return (task.policy, task.cwd) if task is not None and task.policy is not None else self.context

    def build(self) -> None:
        """Make the records of every entry a line changed (once, however many lines did)."""
        for key in self.dirty:
            self._build(key)
        self.dirty.clear()

    def _build(self, key: str) -> None:
        entry = self.entries[key]
        group = entry.group
        task = self.tasks.get(group) if group is not None else None
        place = self.places.get(group)
        if place is None:
            place = self.places[group] = self.placer(self, group)
        ended = (task is not None and task.ended) or (group in self.closed)
        records = entry_records(entry, place, self.facts, ended)
        self.records[key] = records
        if entry.pending and not ended:
            self.pending[key] = None
        else:
            self.pending.pop(key, None)
        if records and records[0]["type"] == "other":
            child = mapping(records[0]["payload"].get("raw")).get("actor_id")
            if isinstance(child, str):
                self.spawns[key] = child

    def repatch(self, group: str | None, place: Place, since: int = 0) -> None:
        """Give the records of turn ``group`` (its entries start at line ``since``) ``place``."""
        if self.places.get(group) == place:
            return
        self.places[group] = place
        for key, entry in reversed(self.entries.items()):
            if entry.line < since:
                break
            if entry.group == group and key not in self.dirty:
                self.records[key] = tuple(placed(record, place) for record in self.records[key])

    def close(self, turns: frozenset[str]) -> None:
        """Turns over from outside (their root turn ended): their calls without a result never get one."""
        if turns == self.closed:
            return
        self.closed = turns
        for key in [key for key in self.pending if self.entries[key].group in turns]:
            self._build(key)

    def own_place(self, group: str | None) -> Place:
        """Where a turn of this (root) thread is: its own turn when prompted, else the latest
        prompted turn before it, in the segment it started in."""
        task = self.tasks.get(group) if group is not None else None
        if task is None:
            return UNPLACED
        if task.prompt is not None:
            return Place(task.turn_id, task.segment)
        return Place(task.before or UNPLACED.turn_id, task.segment)


def is_item(line: Line) -> bool:
    """An ``item_completed`` event: the rollout's Codex writes items."""
    return line.type == "event_msg" and line.payload.get("type") == "item_completed"


def _unplaced(thread: ThreadFold, group: str | None) -> Place:
    return UNPLACED
