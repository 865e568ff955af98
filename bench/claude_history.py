"""A synthetic Claude Code history of realistic shape, deterministic from a seed.

Every line starts from a line the real CLI 2.1.332 wrote (``tests/fixtures/claude-code-real``),
with its ids, times and text changed: ``<root>/<slug>/<id>.jsonl`` per session, with
``<id>/subagents/agent-<id>.jsonl`` + ``.meta.json`` for its sub-agents and
``<id>/tool-results/<id>.txt`` for outputs too large to keep in the line.

As in the real files, most bytes are metadata (about 80%): each invocation starts with Claude
Code's attachments (environment, model, tool and skill listings, a prompt snapshot: ~80 KB)
and the first request's shape (~38 KB); each API call adds a replayed request (~1.3 KB), a
request blob holding the messages it sent (the last output) and a prompt
snapshot (57 KB) after nine calls in ten. ``user``/``assistant`` lines are about 15-20% of
the bytes. A turn is one prompt and ``TOOLS_PER_TURN`` calls (Bash 45%, Read 30%,
Edit 25%), outputs 80% 0.5-3.5 KB, 18% 10-30 KB, 2% 80-200 KB (saved to ``tool-results/``,
the line keeping a 30000-character prefix). One call in
12 starts a sub-agent (three calls of its own); a fifth of the sessions are resumed once (a
second invocation).

Every timestamp is fixed from the seed, so the same seed writes the same bytes; finished
sessions get their last line's time as mtime.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench.history import HISTORY_END_MS, TextPool, _pick, turns_for

REAL = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude-code-real"
_A = "a_read_edit_write/claude/projects/-home-dev-work-a-read-edit-write/e144040e-bd9b-4030-8647-79a28a2ca005.jsonl"
_B = "b_bash/claude/projects/-home-dev-work-b-bash/d2ef0479-efa6-4291-bcf7-a23f2a9dd0ca.jsonl"
_E = "e_subagents/claude/projects/-home-dev-work-e-subagents/973c7bbe-87bd-4c67-a1d0-eb15e8e8c39a"
TOOLS_PER_TURN = 5
TOOL_MIX = (("Bash", 0.45), ("Read", 0.30), ("Edit", 0.25))
OUTPUT_SIZES = ((0.80, 500, 3_500), (0.18, 10_000, 30_000), (0.02, 80_000, 200_000))
PERSIST_FROM = 30_000  # larger outputs are saved to tool-results/, the line keeps this prefix
PROJECTS = 40
SESSION_SPACING_MS = 20 * 60_000
SNAPSHOT_SHARE = 0.9  # calls followed by a prompt snapshot
SUBAGENT_TURNS = 0.4  # turns in which one of the calls starts a sub-agent


def _lines(relative: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (REAL / relative).read_bytes().splitlines()]


class Templates:
    """The real lines each generated line starts from."""

    def __init__(self) -> None:
        a, b = _lines(_A), _lines(_B)
        sub = _lines(f"{_E}/subagents/agent-a81770962b3030069.jsonl")
        self.enqueue, self.dequeue, self.prompt = a[0], a[1], a[2]
        self.attachments = [line for line in a[3:13] if line["type"] == "attachment"]
        self.latch, self.last_prompt, self.shape = a[8], a[13], a[15]
        self.blobs = [a[16], a[17]]
        self.request, self.tools_used = a[18], a[19]
        self.text, self.tool_use, self.read_result = a[20], a[21], a[24]
        self.snapshot = a[25]  # a prompt snapshot after a tool result (57 KB here)
        self.edit_result, self.bash_result, self.cost = a[35], b[25], a[52]
        self.sub_prompt, self.sub_text, self.sub_result = sub[0], sub[13], sub[15]
        self.meta = json.loads((REAL / f"{_E}/subagents/agent-a81770962b3030069.meta.json").read_text())


@dataclass
class ClaudeTotals:
    sessions: int = 0
    subagents: int = 0
    bytes: int = 0
    lines: int = 0
    tool_calls: int = 0
    message_bytes: int = 0  # user and assistant lines
    transcripts: list[Path] = field(default_factory=list)


class ClaudeSession:
    """One session's transcripts, written line by line (deterministic from its own rng)."""

    def __init__(self, rng: random.Random, pool: TextPool, templates: Templates, root: Path, started_ms: int) -> None:
        self.rng, self.pool, self.t = rng, pool, templates
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.cwd = f"/home/dev/work/project{rng.randrange(PROJECTS)}"
        self.slug = "".join(char if char.isalnum() else "-" for char in self.cwd)
        self.path = root / self.slug / f"{self.session_id}.jsonl"
        self.now = started_ms
        self.parent: str | None = None
        self.ids = 0
        self.buffer: list[bytes] = []
        self.totals = ClaudeTotals()
        self.last_output = ""

    # -- plumbing -----------------------------------------------------------------------

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids:05d}{self.rng.getrandbits(40):010x}"

    def _at(self, step_ms: int = 40) -> str:
        self.now += step_ms
        return datetime.fromtimestamp(self.now / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _line(self, template: dict[str, Any], out: list[bytes] | None = None, **fields: Any) -> bytes:
        record = {**template, **fields, "sessionId": self.session_id}
        if "cwd" in record:
            record["cwd"] = self.cwd
        if "uuid" in record:
            record["uuid"] = fields.get("uuid") or self._uuid()
            record["parentUuid"] = self.parent
            self.parent = record["uuid"]
        if "timestamp" in record:
            record["timestamp"] = self._at()
        line = orjson.dumps(record) + b"\n"
        (self.buffer if out is None else out).append(line)
        if record["type"] in ("user", "assistant"):
            self.totals.message_bytes += len(line)
        return line

    # -- what Claude Code writes ----------------------------------------------------------

    def invocation(self, turns: int) -> None:
        """One CLI run: its turns, then the ``cost-state`` it ends with."""
        for number in range(turns):
            self.turn(first=number == 0)
        self._line(self.t.cost, totalCostUSD=round(0.01 * self.totals.tool_calls + 0.004, 6))

    def turn(self, *, first: bool) -> None:
        text = self.pool.cut(self.rng, self.rng.randint(40, 400))
        self._line(self.t.enqueue, content=text)
        self._line(self.t.dequeue)
        self._line(self.t.prompt, message={"role": "user", "content": text}, promptId=self._uuid())
        if first:
            for attachment in self.t.attachments:
                self._line(attachment)
            self._line(self.t.shape)
            for blob in self.t.blobs:
                self._line(blob)
        self._line(self.t.latch)
        self._line(self.t.last_prompt, lastPrompt=text[:200], leafUuid=self.parent)
        subagent_at = self.rng.randrange(TOOLS_PER_TURN) if self.rng.random() < SUBAGENT_TURNS else -1
        for number in range(TOOLS_PER_TURN):
            if number == subagent_at:
                self.subagent()
            else:
                self.call()
        self._line(self.t.request, id=self._uuid())
        self._assistant([{"type": "text", "text": self.pool.cut(self.rng, self.rng.randint(80, 600))}])

    def _assistant(self, blocks: list[dict[str, Any]], message_id: str | None = None) -> str:
        message_id = message_id or self._id("msg_")
        usage = {**self.t.text["message"]["usage"], "input_tokens": self.rng.randint(2000, 9000)}
        for block in blocks:
            message = {**self.t.text["message"], "id": message_id, "content": [block], "usage": usage}
            self._line(self.t.text, message=message)
        return message_id

    def call(self) -> None:
        self._line(self.t.request, id=self._uuid())
        name = _pick(self.rng, TOOL_MIX)
        tool_id = self._id("toolu_")
        path = f"{self.cwd}/src/module{self.rng.randrange(60)}.py"
        size = self._output_size()
        output = self.pool.cut(self.rng, size, numbered=name == "Read")
        tool_input: dict[str, Any]
        if name == "Bash":
            tool_input = {"command": f"pytest -q tests/test_{self.rng.randrange(40)}.py", "description": "Run"}
        elif name == "Read":
            tool_input = {"file_path": path}
        else:
            tool_input = {"file_path": path, "old_string": output[:60], "new_string": output[:60] + "  # x"}
        sent = {"role": "user", "content": [{"type": "text", "text": self.last_output}]}
        self._line(self.t.blobs[1], hash=f"{self.rng.getrandbits(256):064x}", message=sent)
        message_id = self._id("msg_")
        self._assistant([{"type": "text", "text": self.pool.cut(self.rng, self.rng.randint(30, 200))}], message_id)
        self._assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}], message_id)
        self.totals.tool_calls += 1
        self._result(name, tool_id, path, output)
        self.last_output = output[:PERSIST_FROM]
        if self.rng.random() < SNAPSHOT_SHARE:
            self._line(self.t.snapshot)

    def _output_size(self) -> int:
        share = self.rng.random()
        for weight, smallest, largest in OUTPUT_SIZES:
            if share < weight:
                return self.rng.randint(smallest, largest)
            share -= weight
        return OUTPUT_SIZES[-1][2]

    def _result(self, name: str, tool_id: str, path: str, output: str) -> None:
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": output}
        template = {"Bash": self.t.bash_result, "Read": self.t.read_result, "Edit": self.t.edit_result}[name]
        if name == "Bash":
            details: Any = {**template["toolUseResult"], "stdout": output}
            if len(output) > PERSIST_FROM:
                saved = self.path.parent / self.session_id / "tool-results" / f"{tool_id}.txt"
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_text(output)
                details = {**details, "stdout": output[:PERSIST_FROM], "persistedOutputPath": str(saved)}
                block["content"] = f"<persisted-output>\nOutput too large. Full output saved to: {saved}\n"
        elif name == "Read":
            file = {**template["toolUseResult"]["file"], "filePath": path, "content": output}
            details = {**template["toolUseResult"], "file": file}
        else:
            details = {**template["toolUseResult"], "filePath": path, "originalFile": output}
        message = {"role": "user", "content": [block]}
        self._line(template, message=message, toolUseResult=details, sourceToolAssistantUUID=self.parent)

    def subagent(self) -> None:
        """An ``Agent`` call whose sub-agent makes three calls of its own (written as it runs)."""
        self._line(self.t.request, id=self._uuid())
        tool_id = self._id("toolu_")
        agent_id = f"{self.rng.getrandbits(64):016x}"
        prompt = self.pool.cut(self.rng, 200)
        tool_input = {"description": "Helper", "prompt": prompt, "subagent_type": "general-purpose"}
        self._assistant([{"type": "tool_use", "id": tool_id, "name": "Agent", "input": tool_input}])
        folder = self.path.parent / self.session_id / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"agent-{agent_id}.meta.json").write_text(json.dumps({**self.t.meta, "toolUseId": tool_id}))
        lines: list[bytes] = []
        parent, self.parent = self.parent, None
        self._line(self.t.sub_prompt, lines, message={"role": "user", "content": prompt}, agentId=agent_id)
        for attachment in self.t.attachments:
            self._line(attachment, lines, isSidechain=True)
        for _ in range(3):
            sub_tool = self._id("toolu_")
            use = {"type": "tool_use", "id": sub_tool, "name": "Bash", "input": {"command": "ls -1 src"}}
            message = {**self.t.sub_text["message"], "id": self._id("msg_"), "content": [use]}
            self._line(self.t.sub_text, lines, message=message, agentId=agent_id)
            answer = {"tool_use_id": sub_tool, "type": "tool_result", "content": self.pool.cut(self.rng, 800)}
            self._line(self.t.sub_result, lines, message={"role": "user", "content": [answer]}, agentId=agent_id)
        (folder / f"agent-{agent_id}.jsonl").write_bytes(b"".join(lines))
        self.parent = parent
        self.totals.subagents += 1
        self.totals.bytes += sum(map(len, lines))
        done = {"status": "completed", "agentId": agent_id, "content": [{"type": "text", "text": "done"}]}
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": [{"type": "text", "text": "done"}]}
        self._line(self.t.edit_result, message={"role": "user", "content": [block]}, toolUseResult=done)
        self.totals.tool_calls += 1

    def flush(self, *, mtime_ms: int | None = None) -> int:
        """Append what was built to the transcript; returns the bytes written."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = b"".join(self.buffer)
        self.buffer.clear()
        with self.path.open("ab") as out:
            out.write(data)
        if mtime_ms is not None:
            os.utime(self.path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        self.totals.bytes += len(data)
        self.totals.lines += data.count(b"\n")
        return len(data)


def write_claude_history(root: Path, *, seed: int, sessions: int, mean_turns: float) -> ClaudeTotals:
    """Write a finished history of ``sessions`` sessions under ``root`` (a projects folder)."""
    master = random.Random(seed)
    pool = TextPool(random.Random(seed))
    templates = Templates()
    totals = ClaudeTotals()
    first_start = HISTORY_END_MS - sessions * SESSION_SPACING_MS
    for index in range(sessions):
        rng = random.Random(master.getrandbits(64))
        session = ClaudeSession(rng, pool, templates, root, first_start + index * SESSION_SPACING_MS)
        session.invocation(turns_for(rng, mean_turns))
        if rng.random() < 0.2:
            session.now += 3_600_000
            session.invocation(turns_for(rng, mean_turns / 2))
        session.flush(mtime_ms=session.now)
        totals.sessions += 1
        totals.subagents += session.totals.subagents
        totals.bytes += session.totals.bytes
        totals.lines += session.totals.lines
        totals.tool_calls += session.totals.tool_calls
        totals.message_bytes += session.totals.message_bytes
        totals.transcripts.append(session.path)
    return totals


def open_claude_session(root: Path, *, seed: int, target_bytes: int) -> ClaudeSession:
    """An open session (no ``cost-state`` yet) grown turn by turn to about ``target_bytes``."""
    rng = random.Random(seed)
    session = ClaudeSession(rng, TextPool(random.Random(seed)), Templates(), root, HISTORY_END_MS)
    first = True
    while session.totals.bytes < target_bytes:
        session.turn(first=first)
        first = False
        session.flush()
    return session


def write_small_sessions(root: Path, *, seed: int, sessions: int, lines: int = 12) -> ClaudeTotals:
    """``sessions`` short sessions for the warm start (never read there, only fingerprinted): the
    first ``lines`` lines of a generated session under new ids, one in five with a sub-agent."""
    source = root.parent / f".{root.name}-template"
    template = write_claude_history(source, seed=seed, sessions=6, mean_turns=1)
    heads = [path.read_bytes().splitlines(keepends=True)[:lines] for path in template.transcripts]
    helpers = sorted(source.rglob("agent-*.jsonl"))
    metas = {path: path.with_name(path.stem + ".meta.json").read_bytes() for path in helpers}
    rng = random.Random(seed)
    totals = ClaudeTotals()
    for index in range(sessions):
        head = heads[index % len(heads)]
        old_id = orjson.loads(head[0])["sessionId"].encode()
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        slug = root / f"-home-dev-work-project{index % PROJECTS}"
        slug.mkdir(parents=True, exist_ok=True)
        path = slug / f"{session_id}.jsonl"
        data = b"".join(head).replace(old_id, session_id.encode())
        path.write_bytes(data)
        totals.sessions += 1
        totals.bytes += len(data)
        totals.transcripts.append(path)
        if helpers and index % 5 == 0:
            helper = helpers[index % len(helpers)]
            folder = slug / session_id / "subagents"
            folder.mkdir(parents=True)
            (folder / helper.name).write_bytes(b"".join(helper.read_bytes().splitlines(keepends=True)[:5]))
            (folder / f"{helper.stem}.meta.json").write_bytes(metas[helper])
            totals.subagents += 1
    shutil.rmtree(source)
    return totals
