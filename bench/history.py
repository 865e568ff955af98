"""A synthetic Cline history of realistic shape, deterministic from a seed.

Shapes are copied from the real Cline 3.0.65 files in ``tests/fixtures/cline-real``:
``<root>/<id>/<id>.messages.json`` (``{version, updated_at, agent, sessionId, origin,
messages, system_prompt}``) next to the ``<id>/<id>.json`` manifest, both pretty-printed
with two-space indents as ``JSON.stringify(value, null, 2)`` writes them.

The load is a "heavy day": a turn is one prompt,
12 tool calls (an assistant ``[text, tool_use]`` then a user ``tool_result`` each) and a
closing reply, 26 messages; tools are 45% ``run_commands``, 30% ``read_files`` and 25%
``editor``; outputs are 80% 0.5–3.5 KB, 18% 10–40 KB and 2% 80–200 KB; every assistant
message carries ``metrics {inputTokens 9000, outputTokens 400, cost 0.012}``.

Every timestamp inside the files is fixed (the history ends at ``HISTORY_END_MS``), so the
same seed writes the same bytes. Finished sessions get their last message's time as file
mtime, as if Cline last wrote them then: the capture then sees an old history, not 10,000
sessions changed today.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

HISTORY_END_MS = 1_780_272_000_000  # 2026-06-01T00:00:00Z: the newest finished session ends here
SESSION_SPACING_MS = 30 * 60_000  # one session started every half hour, going back in time
TURN_SPACING_MS = 2 * 60_000  # a turn every 2 minutes (heavy day)
TOOLS_PER_TURN = 12
MESSAGES_PER_TURN = 2 + 2 * TOOLS_PER_TURN
TOOL_MIX = (("run_commands", 0.45), ("read_files", 0.30), ("editor", 0.25))
# (share, smallest, largest) output size in bytes
OUTPUT_SIZES = ((0.80, 500, 3_500), (0.18, 10_000, 40_000), (0.02, 80_000, 200_000))
METRICS = {"inputTokens": 9000, "outputTokens": 400, "cacheReadTokens": 0, "cacheWriteTokens": 0, "cost": 0.012}
CLINE_VERSION = "3.0.65"
WORKSPACE = "/home/dev/work/project"
_POOL_BYTES = 512 * 1024  # the text outputs are cut from
_SYSTEM_PROMPT_CHARS = 4_270  # as long as the real one


def dumps(document: Any) -> bytes:
    """What Cline writes: ``JSON.stringify(document, null, 2)`` (no trailing newline)."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


@dataclass(frozen=True, slots=True)
class WrittenSession:
    session_id: str
    messages_path: Path
    manifest_path: Path
    bytes: int  # both files
    tool_calls: int
    messages: int


@dataclass
class HistoryTotals:
    sessions: int = 0
    bytes: int = 0
    messages: int = 0
    tool_calls: int = 0
    written: list[WrittenSession] = field(default_factory=list)

    def add(self, session: WrittenSession) -> None:
        self.sessions += 1
        self.bytes += session.bytes
        self.messages += session.messages
        self.tool_calls += session.tool_calls
        self.written.append(session)


class TextPool:
    """Deterministic text that outputs are cut from (code-, log- and shell-like lines)."""

    WORDS = (
        *("def", "return", "self", "import", "from", "class", "value", "items", "result", "error", "config"),
        *("path", "test", "assert", "build", "run", "check", "update", "index", "module", "source", "target"),
        *("cache", "stream", "buffer", "record", "status", "session", "request", "response", "handler"),
        *("parse", "write", "read", "open", "close", "commit", "branch", "merge"),
    )

    def __init__(self, rng: random.Random) -> None:
        lines: list[str] = []
        size = 0
        while size < _POOL_BYTES:
            words = " ".join(rng.choice(self.WORDS) for _ in range(rng.randint(2, 12)))
            indent = " " * (4 * rng.randint(0, 3))
            line = f"{indent}{words}{rng.choice(('', ':', '()', ' = 0', ',', ';'))}"
            lines.append(line)
            size += len(line) + 1
        self.text = "\n".join(lines)
        self.numbered = "\n".join(f"{i} | {line}" for i, line in enumerate(lines, 1))

    def cut(self, rng: random.Random, size: int, *, numbered: bool = False) -> str:
        text = self.numbered if numbered else self.text
        if size >= len(text):
            return (text * (size // len(text) + 1))[:size]
        start = rng.randrange(0, len(text) - size)
        return text[start : start + size]


class SessionWriter:
    """Builds one session's documents turn by turn (deterministic from its own rng)."""

    def __init__(self, rng: random.Random, pool: TextPool, session_id: str, started_ms: int) -> None:
        self.rng = rng
        self.pool = pool
        self.session_id = session_id
        self.started_ms = started_ms
        self.messages: list[dict[str, Any]] = []
        self.turns = 0
        self.tool_calls = 0
        self.last_ms = started_ms
        self._ids = 0

    def _id(self, prefix: str) -> str:
        self._ids += 1
        letters = "".join(self.rng.choices(string.ascii_letters + string.digits, k=8))
        return f"{prefix}{letters}{self._ids}"

    def _assistant(self, content: list[dict[str, Any]], at: int) -> dict[str, Any]:
        return {
            "id": self._id("msg_"),
            "role": "assistant",
            "content": content,
            "ts": at,
            "modelInfo": {"id": "claude-sonnet-4-5", "provider": "anthropic"},
            "metrics": dict(METRICS),
        }

    def add_turn(self) -> None:
        """One prompt, 12 tool calls with their results, one closing reply (26 messages)."""
        rng = self.rng
        self.turns += 1
        at = self.started_ms + (self.turns - 1) * TURN_SPACING_MS
        self.messages.append(
            {
                "id": self._id("usr-"),
                "role": "user",
                "content": [{"type": "text", "text": f'<user_input mode="act">{self._prompt()}</user_input>'}],
                "ts": at,
            }
        )
        for call in range(TOOLS_PER_TURN):
            at += rng.randint(2_000, 8_000)
            call_id = f"call_{self.turns}_{call}_{self._ids}"
            name = _pick(rng, TOOL_MIX)
            tool_input, result = self._tool(name)
            text = self.pool.cut(rng, rng.randint(40, 240)).replace("\n", " ")
            self.messages.append(
                self._assistant(
                    [
                        {"type": "text", "text": text},
                        {"type": "tool_use", "id": call_id, "name": name, "input": tool_input},
                    ],
                    at,
                )
            )
            at += rng.randint(20, 3_000)
            self.messages.append(
                {
                    "id": self._id("msg_"),
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "name": name, "content": result}],
                    "ts": at,
                }
            )
            self.tool_calls += 1
        at += rng.randint(2_000, 8_000)
        reply = self.pool.cut(rng, rng.randint(200, 1_200)).replace("\n", " ")
        self.messages.append(self._assistant([{"type": "text", "text": reply}], at))
        self.last_ms = at

    def add_reply(self, text: str, at: int | None = None) -> dict[str, Any]:
        """One more assistant text message (what an incremental update appends)."""
        self.last_ms = at if at is not None else self.last_ms + 1_000
        message = self._assistant([{"type": "text", "text": text}], self.last_ms)
        self.messages.append(message)
        return message

    def _prompt(self) -> str:
        return self.pool.cut(self.rng, self.rng.randint(60, 400)).replace("\n", " ")

    def _output_size(self) -> int:
        rng = self.rng
        share = rng.random()
        for weight, low, high in OUTPUT_SIZES:
            if share < weight:
                return rng.randint(low, high)
            share -= weight
        return OUTPUT_SIZES[-1][2]

    def _tool(self, name: str) -> tuple[dict[str, Any], Any]:
        rng = self.rng
        size = self._output_size()
        path = f"{WORKSPACE}/src/{rng.choice(TextPool.WORDS)}/{rng.choice(TextPool.WORDS)}.py"
        if name == "run_commands":
            command = f"{rng.choice(('pytest -q', 'git status', 'make build', 'ls -la', 'npm test'))} {path}"
            output = self.pool.cut(rng, size)
            return {"commands": [command]}, [{"query": command, "result": output, "success": True}]
        if name == "read_files":
            return {"files": [{"path": path}]}, [
                {"query": path, "result": self.pool.cut(rng, size, numbered=True), "success": True}
            ]
        old_text = self.pool.cut(rng, rng.randint(40, 400))
        new_text = self.pool.cut(rng, rng.randint(40, 400))
        diff = self.pool.cut(rng, size)
        result = {"query": f"edit:{path}", "result": f"Edited {path}\n```diff\n{diff}\n```", "success": True}
        return {"path": path, "old_text": old_text, "new_text": new_text}, orjson.dumps(result).decode()

    def messages_document(self, limit: int | None = None) -> dict[str, Any]:
        """The messages file's document; ``limit`` keeps only the first messages (a turn in progress)."""
        messages = self.messages if limit is None else self.messages[:limit]
        return {
            "version": 1,
            "updated_at": _iso(self.last_ms),
            "agent": "lead",
            "sessionId": self.session_id,
            "origin": {"source": "cli", "mode": "user", "sessionId": self.session_id, "version": CLINE_VERSION},
            "messages": messages,
            "system_prompt": self.pool.text[:_SYSTEM_PROMPT_CHARS],
        }

    def manifest(self, *, ended: bool) -> dict[str, Any]:
        folder = f"/home/dev/.cline/data/sessions/{self.session_id}"
        manifest: dict[str, Any] = {
            "version": 1,
            "session_id": self.session_id,
            "source": "cli",
            "pid": 10_000 + self.started_ms % 50_000,
            "started_at": _iso(self.started_ms),
        }
        if ended:
            manifest |= {"ended_at": _iso(self.last_ms + 100), "exit_code": 0, "status": "completed"}
        else:
            manifest["status"] = "running"
        first_prompt = self.messages[0]["content"][0]["text"] if self.messages else ""
        manifest |= {
            "interactive": True,
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "cwd": WORKSPACE,
            "workspace_root": WORKSPACE,
            "enable_tools": True,
            "prompt": first_prompt[:200],
            "metadata": {
                "sessionHistoryOrigin": {"mode": "user", "version": CLINE_VERSION},
                "git": {"branch": "main"},
                "title": first_prompt[:80],
            },
            "messages_path": f"{folder}/{self.session_id}.messages.json",
        }
        return manifest

    def write(self, root: Path, *, ended: bool, mtime_ms: int | None = None) -> WrittenSession:
        """Write both files (whole, in place, as Cline does); ``mtime_ms`` backdates them."""
        folder = root / self.session_id
        folder.mkdir(parents=True, exist_ok=True)
        messages_path = folder / f"{self.session_id}.messages.json"
        manifest_path = folder / f"{self.session_id}.json"
        messages_blob = dumps(self.messages_document())
        manifest_blob = dumps(self.manifest(ended=ended))
        messages_path.write_bytes(messages_blob)
        manifest_path.write_bytes(manifest_blob)
        if mtime_ms is not None:
            stamp = mtime_ms * 1_000_000
            for path in (messages_path, manifest_path):
                os.utime(path, ns=(stamp, stamp))
        return WrittenSession(
            self.session_id,
            messages_path,
            manifest_path,
            len(messages_blob) + len(manifest_blob),
            self.tool_calls,
            len(self.messages),
        )


def _pick(rng: random.Random, weighted: tuple[tuple[str, float], ...]) -> str:
    share = rng.random()
    for name, weight in weighted:
        if share < weight:
            return name
        share -= weight
    return weighted[-1][0]


def _iso(ms: int) -> str:
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_id_for(rng: random.Random, started_ms: int) -> str:
    return f"{started_ms}_{''.join(rng.choices(string.ascii_lowercase + string.digits, k=5))}"


def turns_for(rng: random.Random, mean_turns: float, *, exact: bool = False) -> int:
    """Turns of one session: 1 plus a geometric tail, so the mean is ``mean_turns`` (``exact``: that many)."""
    if exact:
        return max(1, round(mean_turns))
    if mean_turns <= 1:
        return 1
    extra = 0
    stop = 1 / mean_turns
    while rng.random() > stop:
        extra += 1
    return 1 + extra


def history_sessions(
    seed: int, sessions: int, mean_turns: float, *, exact: bool = False, min_bytes: int = 0
) -> Iterator[SessionWriter]:
    """The finished sessions of a history, oldest first, each built with its own rng; a session
    whose messages file would be under ``min_bytes`` is drawn again (the next seed)."""
    master = random.Random(seed)
    pool = TextPool(random.Random(seed))
    first_start = HISTORY_END_MS - sessions * SESSION_SPACING_MS
    for index in range(sessions):
        started = first_start + index * SESSION_SPACING_MS
        while True:
            rng = random.Random(master.getrandbits(64))
            writer = SessionWriter(rng, pool, session_id_for(rng, started), started)
            for _ in range(turns_for(rng, mean_turns, exact=exact)):
                writer.add_turn()
            if not min_bytes or len(dumps(writer.messages_document())) >= min_bytes:
                break
        yield writer


def write_history(
    root: Path, *, seed: int, sessions: int, mean_turns: float, exact: bool = False, min_bytes: int = 0
) -> HistoryTotals:
    """Write a finished history of ``sessions`` sessions under ``root`` (a sessions folder);
    ``exact``: each of ``mean_turns`` turns; ``min_bytes``: each messages file at least that big."""
    root.mkdir(parents=True, exist_ok=True)
    totals = HistoryTotals()
    for writer in history_sessions(seed, sessions, mean_turns, exact=exact, min_bytes=min_bytes):
        totals.add(writer.write(root, ended=True, mtime_ms=writer.last_ms + 100))
    return totals


def open_session(
    seed: int, *, target_bytes: int, min_turns: int = 1, started_ms: int = HISTORY_END_MS
) -> SessionWriter:
    """An open session grown turn by turn until its messages file is about ``target_bytes`` and it
    has at least ``min_turns`` turns (a figure named by its steps, as issue 27's 11 MB / 2,600-step
    session, must not be measured on fewer: bytes alone gave 2,314-2,496 steps)."""
    rng = random.Random(seed)
    writer = SessionWriter(rng, TextPool(random.Random(seed)), session_id_for(rng, started_ms), started_ms)
    for _ in range(max(1, min_turns)):
        writer.add_turn()
    size = len(dumps(writer.messages_document()))
    while size < target_bytes:
        # Aim just short of the target from the mean turn so far (at most doubling, as one
        # turn with a 200 KB output is a poor mean), then measure again.
        more = max(1, min(writer.turns, int((target_bytes - size) / (size / writer.turns) * 0.9)))
        for _ in range(more):
            writer.add_turn()
        size = len(dumps(writer.messages_document()))
    return writer
