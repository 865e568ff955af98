"""A synthetic Codex history of realistic shape, deterministic from a seed.

Every line starts from a line the real Codex CLI 0.171.0 wrote (``tests/fixtures/codex-real``),
with its ids, times and text changed: ``<root>/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``
per thread, a sub-agent's thread in a rollout of its own (``parent_thread_id``).

As in the real files, much of a rollout is context Codex writes for itself: a 22 KB
``session_meta`` (the base instructions), and at each turn the developer instructions, the
environment, a ``world_state``, a ``turn_context`` and the thread settings (~13 KB). Each
model response adds a ``token_usage_record`` and a ``token_count`` (~1.5 KB). A turn is one
prompt and ``CALLS_PER_TURN`` calls, each written three times (the ``function_call``, its
``item_completed`` with the output as Codex kept it, and the ``function_call_output`` the
model got): commands 65%, patches 25%, other tools 10%; outputs 80% 0.2-3 KB, 18% 5-30 KB,
2% 100-200 KB (the item keeps 64 KiB around Codex's truncation line, the model's copy 10 KB).
One turn in eight spawns a sub-agent (three calls of its own, its own rollout) and waits for
it; a fifth of the sessions are resumed once.
"""

from __future__ import annotations

import copy
import json
import os
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench.history import HISTORY_END_MS, TextPool, _pick, turns_for

REAL = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "codex-real"
_A = "a_commands/sessions/2026/12/01/rollout-2026-12-01T19-20-30-01a2330d-2877-74e1-85dd-6d88f53166fa.jsonl"
_B = "b_apply_patch/sessions/2026/12/01/rollout-2026-12-01T19-20-37-01a2330d-43cd-74c0-9710-5b1df934c4dc.jsonl"
_D = "d_subagent/sessions/2026/12/01/rollout-2026-12-01T19-20-54-01a2330d-8622-79c1-aa53-fa5925b71fc2.jsonl"
CALLS_PER_TURN = 8
CALL_MIX = (("command", 0.65), ("patch", 0.25), ("other", 0.10))
OUTPUT_SIZES = ((0.80, 200, 3_000), (0.18, 5_000, 30_000), (0.02, 100_000, 200_000))
KEPT_CHARS = 65_536  # what Codex keeps of an output in its item
MODEL_CHARS = 10_000  # what the model is given back
SESSION_SPACING_MS = 20 * 60_000
SUBAGENT_TURNS = 0.125
RESUMED = 0.2
WORKSPACE = "/home/dev/work/project"


def _lines(relative: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (REAL / relative).read_bytes().splitlines()]


class Templates:
    """The real lines each generated line starts from, by what they are."""

    def __init__(self) -> None:
        a, b, child = _lines(_A), _lines(_B), _lines(_D)
        self.meta = a[0]
        self.child_meta = child[0]
        self.context = [a[index] for index in (1, 2, 3, 4, 5, 6)]  # task_started .. thread_settings_applied
        self.user_response, self.user_item = a[7], a[8]
        self.agent_item, self.agent_response = a[9], a[10]
        self.call, self.command_item, self.call_output = a[11], a[13], a[14]
        self.usage, self.token_count = a[12], a[15]
        self.patch_item = b[13]
        self.complete = a[-1]


def _uuid7(rng: random.Random, ms: int) -> str:
    value = (ms & (2**48 - 1)) << 80 | 0x7 << 76 | rng.getrandbits(12) << 64 | 0b10 << 62 | rng.getrandbits(62)
    return str(uuid.UUID(int=value))


def _iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass
class CodexTotals:
    sessions: int = 0
    threads: int = 0
    bytes: int = 0
    lines: int = 0
    tool_calls: int = 0
    rollouts: list[Path] = field(default_factory=list)


class Thread:
    """One thread's rollout, built line by line and appended to its file."""

    def __init__(self, session: CodexSession, thread_id: str, started_ms: int, parent: str | None) -> None:
        self.session = session
        self.thread_id = thread_id
        self.parent = parent
        self.started_ms = started_ms
        self.pending: list[bytes] = []
        self.ordinal = 0
        stamp = datetime.fromtimestamp(started_ms / 1000, UTC)
        folder = session.root / stamp.strftime("%Y/%m/%d")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"rollout-{stamp.strftime('%Y-%m-%dT%H-%M-%S')}-{thread_id}.jsonl"
        templates = session.templates
        meta = copy.deepcopy(templates.child_meta if parent else templates.meta)
        payload = meta["payload"]
        payload.update(id=thread_id, session_id=session.session_id, timestamp=_iso(started_ms), cwd=WORKSPACE)
        if parent:
            payload["parent_thread_id"] = parent
            payload["source"]["subagent"]["thread_spawn"]["parent_thread_id"] = parent
            payload["base_instructions"] = templates.meta["payload"]["base_instructions"]
        self.line(meta)

    def line(self, template: dict[str, Any], **payload: Any) -> None:
        session = self.session
        session.now += session.rng.randint(5, 400)
        record = {**template, "timestamp": _iso(session.now), "ordinal": self.ordinal}
        if payload:
            record["payload"] = {**template["payload"], **payload}
        self.ordinal += 1
        self.pending.append(orjson.dumps(record) + b"\n")

    def flush(self, mtime_ms: int | None = None) -> int:
        data = b"".join(self.pending)
        self.pending.clear()
        with self.path.open("ab") as handle:
            handle.write(data)
        if mtime_ms is not None:
            os.utime(self.path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        totals = self.session.totals
        totals.bytes += len(data)
        totals.lines += data.count(b"\n")
        return len(data)


class CodexSession:
    """One session: the root thread's rollout and its sub-agents' (deterministic from ``rng``)."""

    def __init__(self, rng: random.Random, pool: TextPool, templates: Templates, root: Path, started_ms: int) -> None:
        self.rng = rng
        self.pool = pool
        self.templates = templates
        self.root = root
        self.now = started_ms
        self.totals = CodexTotals()
        self.session_id = _uuid7(rng, started_ms)
        self.lead = Thread(self, self.session_id, started_ms, None)
        self.threads = [self.lead]
        self.calls = 0
        self.turns = 0
        self.resumes = 0

    def _id(self, prefix: str) -> str:
        self.calls += 1
        return f"{prefix}_{self.calls}_{self.rng.getrandbits(32):08x}"

    def turn(
        self, thread: Thread | None = None, *, calls: int = CALLS_PER_TURN, resumed: bool = False, parent_turn: str = ""
    ) -> None:
        """One prompt of ``thread`` (the lead's by default) and its calls; a sub-agent's turn
        runs for its parent's ``parent_turn``."""
        thread = thread or self.lead
        templates = self.templates
        turn_id = _uuid7(self.rng, self.now)
        self.turns += 1
        context = templates.context
        if resumed:
            thread.line(context[5], thread_id=thread.thread_id)  # a new process: its settings first
        root_turn = parent_turn or turn_id
        attribution = {**context[0]["payload"]["turn_attribution"], "turn_id": turn_id, "root_turn_id": root_turn}
        attribution["parent_turn_id"] = parent_turn or None
        thread.line(context[0], turn_id=turn_id, root_turn_id=root_turn, turn_attribution=attribution)
        for template in context[1:4]:
            thread.line(template)
        thread.line(context[4], turn_id=turn_id, root_turn_id=turn_id)
        if not resumed:
            thread.line(context[5], thread_id=thread.thread_id)
        prompt = self.pool.cut(self.rng, self.rng.randint(40, 400))
        content = [{"type": "input_text", "text": prompt}]
        thread.line(templates.user_response, id=self._id("msg"), content=content)
        item = {"type": "UserMessage", "id": _uuid7(self.rng, self.now), "content": [{"type": "text", "text": prompt}]}
        self.item(thread, turn_id, item)
        spawns = thread is self.lead and self.rng.random() < SUBAGENT_TURNS
        for number in range(calls):
            if spawns and number == calls // 2:
                self.subagent(thread, turn_id)
            else:
                self.tool_call(thread, turn_id)
        self.agent(thread, turn_id)
        thread.line(templates.complete, turn_id=turn_id, root_turn_id=turn_id)

    def item(self, thread: Thread, turn_id: str, item: dict[str, Any]) -> None:
        started = self.now + 1
        payload = {"thread_id": thread.thread_id, "turn_id": turn_id, "item": item}
        thread.line(self.templates.user_item, **payload, started_at_ms=started, completed_at_ms=started + 50)

    def response(self, thread: Thread, turn_id: str) -> None:
        """The end of one model response: its usage, and Codex's running totals."""
        templates = self.templates
        usage = {**templates.usage["payload"]["usage"], "input_tokens": self.rng.randint(2_000, 60_000)}
        thread.line(
            templates.usage, thread_id=thread.thread_id, turn_id=turn_id, response_id=self._id("resp"), usage=usage
        )
        thread.line(templates.token_count)

    def agent(self, thread: Thread, turn_id: str) -> None:
        text = self.pool.cut(self.rng, self.rng.randint(80, 1_200))
        item_id = self._id("msg")
        self.item(thread, turn_id, {"type": "AgentMessage", "id": item_id, "content": [{"type": "Text", "text": text}]})
        content = [{"type": "output_text", "text": text, "annotations": []}]
        thread.line(self.templates.agent_response, id=item_id, content=content)
        self.response(thread, turn_id)

    def tool_call(self, thread: Thread, turn_id: str) -> None:
        templates = self.templates
        call_id = self._id("call")
        kind = _pick(self.rng, CALL_MIX)
        shares = tuple((str(index), share) for index, (share, _, _) in enumerate(OUTPUT_SIZES))
        _, low, high = OUTPUT_SIZES[int(_pick(self.rng, shares))]
        output = self.pool.cut(self.rng, self.rng.randint(low, high))
        if len(output) > KEPT_CHARS:
            half = KEPT_CHARS // 2
            output = output[:half] + "\n\n... command output truncated for persistence ...\n\n" + output[-half:]
        passthrough = {"turn_id": turn_id}
        if kind == "other":
            arguments = json.dumps({"plan": [{"step": self.pool.cut(self.rng, 60), "status": "in_progress"}]})
            thread.line(templates.call, call_id=call_id, name="update_plan", arguments=arguments, **_meta(passthrough))
            self.response(thread, turn_id)
            thread.line(templates.call_output, call_id=call_id, output="Plan updated")
            return
        command = self.pool.cut(self.rng, self.rng.randint(10, 120)).replace("\n", " ")
        thread.line(templates.call, call_id=call_id, arguments=json.dumps({"cmd": command}), **_meta(passthrough))
        self.response(thread, turn_id)
        started = self.now + 1
        if kind == "patch":
            path = f"{WORKSPACE}/src/module_{self.rng.randint(1, 400)}.py"
            change = {"type": "update", "unified_diff": "@@ -1,3 +1,3 @@\n" + output[:4_000], "move_path": None}
            item = {**templates.patch_item["payload"]["item"], "id": call_id, "changes": {path: change}}
        else:
            item = {**templates.command_item["payload"]["item"], "id": call_id, "aggregated_output": output}
            item["command"] = ["/bin/bash", "-lc", command]
            item["exit_code"] = 0 if self.rng.random() < 0.9 else 1
            item["status"] = "completed" if item["exit_code"] == 0 else "failed"
        payload = {"thread_id": thread.thread_id, "turn_id": turn_id, "item": item}
        thread.line(templates.command_item, **payload, started_at_ms=started, completed_at_ms=started + 100)
        envelope = (
            f"Chunk ID: 0a1b2c\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n{output[:MODEL_CHARS]}"
        )
        thread.line(templates.call_output, call_id=call_id, output=envelope)
        self.totals.tool_calls += 1

    def subagent(self, thread: Thread, turn_id: str) -> None:
        """A ``spawn_agent`` call, the child's own rollout (three calls), and a ``wait_agent``."""
        templates = self.templates
        child_id = _uuid7(self.rng, self.now + 10)
        task = self.pool.cut(self.rng, self.rng.randint(60, 300))
        for name, arguments in (("spawn_agent", {"message": task}), ("wait_agent", {"targets": [child_id]})):
            call_id = self._id("call")
            args = json.dumps(arguments)
            thread.line(templates.call, call_id=call_id, name=name, namespace="multi_agent_v1", arguments=args)
            self.response(thread, turn_id)
            tool = "spawn_agent" if name == "spawn_agent" else "wait"
            item: dict[str, object] = {"type": "CollabAgentToolCall", "id": call_id, "tool": tool}
            item.update(status="completed", sender_thread_id=thread.thread_id, receiver_thread_ids=[child_id])
            self.item(thread, turn_id, item)
            thread.line(templates.call_output, call_id=call_id, output=json.dumps({"agent_id": child_id}))
            if name == "spawn_agent":
                child = Thread(self, child_id, self.now, thread.thread_id)
                self.threads.append(child)
                self.turn(child, calls=3, parent_turn=turn_id)

    def flush(self, mtime_ms: int | None = None) -> None:
        for thread in self.threads:
            thread.flush(mtime_ms)


def _meta(passthrough: dict[str, Any]) -> dict[str, Any]:
    return {"internal_chat_message_metadata_passthrough": passthrough}


def write_codex_history(root: Path, *, seed: int, sessions: int, mean_turns: float) -> CodexTotals:
    """Write a finished history of ``sessions`` sessions under ``root`` (a sessions folder)."""
    master = random.Random(seed)
    pool = TextPool(random.Random(seed))
    templates = Templates()
    totals = CodexTotals()
    first_start = HISTORY_END_MS - sessions * SESSION_SPACING_MS
    for index in range(sessions):
        rng = random.Random(master.getrandbits(64))
        session = CodexSession(rng, pool, templates, root, first_start + index * SESSION_SPACING_MS)
        for _ in range(turns_for(rng, mean_turns)):
            session.turn()
        if rng.random() < RESUMED:
            session.now += 3_600_000
            session.turn(resumed=True)
        session.flush(mtime_ms=session.now)
        totals.sessions += 1
        totals.threads += len(session.threads)
        totals.bytes += session.totals.bytes
        totals.lines += session.totals.lines
        totals.tool_calls += session.totals.tool_calls
        totals.rollouts.extend(thread.path for thread in session.threads)
    return totals


def open_codex_session(root: Path, *, seed: int, target_bytes: int) -> CodexSession:
    """A session grown turn by turn to about ``target_bytes``."""
    rng = random.Random(seed)
    session = CodexSession(rng, TextPool(random.Random(seed)), Templates(), root, HISTORY_END_MS)
    while session.totals.bytes < target_bytes:
        session.turn()
        session.flush()
    return session
