"""What the reliability suites share: reading a whole store record by record, checking a
store's integrity, the one-shot reference ingest, and small synthetic Cline sessions.

Stores are always read through a fresh read-only SQLite connection, so what a test sees
is what any other process would see.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import orjson

from postrun.store import codec
from tests.conftest import run_postrun
from tests.support.capture_process import write_in_place

# The stored columns that come from the session's files (not when or where it was stored).
_SESSION_COLUMNS = (
    "agent, record, digest, started_at, ended_at, model, provider, cline_title, cline_status, git_branch, approvals"
)


@dataclass(frozen=True)
class StoredRecords:
    """Everything stored about one session that its files decide, record by record."""

    columns: tuple[Any, ...]
    segments: tuple[tuple[int, str], ...]
    actors: tuple[tuple[str, str], ...]
    turns: tuple[tuple[str, int, str], ...]
    steps: tuple[tuple[str, int, str], ...]  # (id, seq, record) in seq order


def _connect(db: Path, flags: int = apsw.SQLITE_OPEN_READONLY) -> apsw.Connection:
    connection = apsw.Connection(str(db), flags=flags)
    connection.set_busy_timeout(5000)
    codec.register(connection)  # step records are compressed; the search index reads them
    return connection


def read_records(db: Path) -> dict[str, StoredRecords]:
    """Every stored session (one read transaction: a consistent snapshot); {} without a store."""
    if not db.exists():
        return {}
    connection = _connect(db)
    try:
        with connection:  # one snapshot of the whole store
            if connection.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sessions'").get == 0:
                return {}
            found: dict[str, StoredRecords] = {}
            for session_id, *columns in connection.execute(f"SELECT id, {_SESSION_COLUMNS} FROM sessions"):
                found[session_id] = StoredRecords(
                    columns=tuple(columns),
                    segments=_rows(
                        connection, "SELECT idx, record FROM segments WHERE session_id = ? ORDER BY idx", session_id
                    ),
                    actors=_rows(
                        connection, "SELECT id, record FROM actors WHERE session_id = ? ORDER BY id", session_id
                    ),
                    turns=_rows(
                        connection,
                        "SELECT id, idx, record FROM turns WHERE session_id = ? ORDER BY idx, id",
                        session_id,
                    ),
                    steps=_rows(
                        connection,
                        "SELECT id, seq, postrun_record(record) FROM steps WHERE session_id = ? ORDER BY seq",
                        session_id,
                    ),
                )
            return found
    finally:
        connection.close()


def _rows(connection: apsw.Connection, sql: str, session_id: str) -> tuple[Any, ...]:
    return tuple(tuple(row) for row in connection.execute(sql, (session_id,)))


def differences(found: Mapping[str, StoredRecords], expected: Mapping[str, StoredRecords], limit: int = 5) -> list[str]:
    """A readable list of what differs between two stores (empty when they hold the same records)."""
    problems: list[str] = []
    for session_id in sorted(expected.keys() - found.keys()):
        problems.append(f"{session_id}: missing")
    for session_id in sorted(found.keys() - expected.keys()):
        problems.append(f"{session_id}: not expected")
    for session_id in sorted(found.keys() & expected.keys()):
        left, right = found[session_id], expected[session_id]
        for name in ("columns", "segments", "actors", "turns", "steps"):
            mine, theirs = getattr(left, name), getattr(right, name)
            if mine != theirs:
                detail = f"{len(mine)} vs {len(theirs)} rows"
                if name == "steps":
                    first = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), None)
                    detail += f", first differing step #{first}" if first is not None else ""
                problems.append(f"{session_id}: {name} differ ({detail})")
    return problems[:limit] + ([f"... and {len(problems) - limit} more"] if len(problems) > limit else [])


def stored_variants(db: Path, versions: Mapping[str, Sequence[StoredRecords]]) -> dict[str, int | None]:
    """Which of its versions each session holds in the store now (None: not stored); fails on
    anything else (a mix of two versions)."""
    found = read_records(db)
    assert found.keys() <= versions.keys()
    stored: dict[str, int | None] = {}
    for session_id, candidates in versions.items():
        records = found.get(session_id)
        matches = [v for v, expected in enumerate(candidates) if records == expected]
        assert records is None or matches, f"{session_id}: stored records are no valid version (a mix?)"
        stored[session_id] = matches[0] if matches else None
    return stored


def store_problems(db: Path) -> list[str]:
    """What is wrong with a store file: SQLite's integrity and foreign-key checks, and the
    full-text index out of step with the steps it indexes (it is written in the same transaction)."""
    connection = _connect(db)
    try:
        with connection:
            problems = [str(row[0]) for row in connection.execute("PRAGMA integrity_check") if row[0] != "ok"]
            problems += [f"foreign key: {tuple(row)}" for row in connection.execute("PRAGMA foreign_key_check")]
        return problems + _search_index_problems(db)
    finally:
        connection.close()


def _search_index_problems(db: Path) -> list[str]:
    """FTS5's own check that the index holds exactly the text of the steps it indexes (it
    writes nothing, but is an INSERT command, so it needs a read-write connection)."""
    connection = _connect(db, apsw.SQLITE_OPEN_READWRITE)
    try:
        connection.execute("INSERT INTO step_search (step_search, rank) VALUES ('integrity-check', 1)")
    except apsw.CorruptError as exc:
        return [f"search index out of step with the steps: {exc}"]
    finally:
        connection.close()
    return []


def one_shot(root: Path, db: Path, env: Mapping[str, str], *, agent: str = "cline") -> dict[str, StoredRecords]:
    """What a clean `postrun ingest` of ``root`` into a new store ``db`` holds (the reference)."""
    assert not db.exists(), f"the reference store {db} must be new"
    result = run_postrun("ingest", "--agent", agent, str(root), env=dict(env, POSTRUN_DB=str(db)))
    assert "Traceback" not in result.stderr, result.stderr
    return read_records(db)


def isolated_env(base: Path) -> dict[str, str]:
    """A process environment whose HOME and XDG folders are under ``base`` (not created: Postrun
    makes what it needs). Like the ``env`` fixture, for fixtures wider than one test."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    prefixes = ("POSTRUN_", "CLINE_", "CLAUDE_", "XDG_")
    environ = {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}
    for key in ("NOTIFY_SOCKET", "INVOCATION_ID", "JOURNAL_STREAM"):
        environ.pop(key, None)
    return environ | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "POSTRUN_AGENTS": "cline",  # as the ``env`` fixture: a test of several agents names them
        "PYTHONUNBUFFERED": "1",
    }


# -- small synthetic sessions -------------------------------------------------------------

T0_MS = 1_790_000_000_000
WORKSPACE = "/home/dev/app"
_WORDS = ("build", "test", "config", "parse", "write", "error", "value", "index", "cache", "record", "stream")


@dataclass
class Synthetic:
    """One Cline session built message by message, with the shapes of Cline's real files.

    Every change is deterministic from ``seed``. ``write`` writes every file whole and in
    place (truncate, then write), as Cline does. ``with_helper`` gives it a sub-agent: the
    lead's ``spawn_agent`` call, and the helper's own transcript that grows beside the lead's.
    """

    session_id: str
    seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    status: str = "running"
    calls: int = 0
    edits: int = 0
    with_helper: bool = False
    helper_messages: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        if not self.messages:
            self.messages.append(self._user(f'<user_input mode="act">{self._words(12)}</user_input>'))
        if self.with_helper and not self.helper_messages:
            task = f"Check {self._words(5)}."
            spawn = {"type": "tool_use", "id": "call_spawn", "name": "spawn_agent", "input": {"task": task}}
            self.messages.append(self._assistant([spawn]))
            self.messages.append(self._result("call_spawn", "spawn_agent", '{"text": "done"}'))
            self.helper_messages.append({**self._user(task), "id": "h0"})

    @property
    def helper_id(self) -> str:
        return f"agent_{self.seed}_h"

    @property
    def now_ms(self) -> int:
        return T0_MS + 1000 * len(self.messages)

    def _words(self, count: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(count))

    def _user(self, text: str) -> dict[str, Any]:
        return {
            "id": f"u{len(self.messages)}",
            "role": "user",
            "ts": self.now_ms,
            "content": [{"type": "text", "text": text}],
        }

    def grow(self) -> None:
        """One more tool call (an assistant call and its result), or a reply (of the helper, sometimes)."""
        self.calls += 1
        if self.with_helper and self.rng.random() < 0.3:
            call_id = f"call_{self.calls}"  # the helper's ids repeat the lead's naming
            command = f"ls {self.rng.choice(_WORDS)}"
            self.helper_messages.append(
                {
                    **self._assistant(
                        [{"type": "tool_use", "id": call_id, "name": "run_commands", "input": {"commands": [command]}}]
                    ),
                    "id": f"h{len(self.helper_messages)}",
                }
            )
            self.helper_messages.append(
                {
                    **self._result(
                        call_id, "run_commands", [{"query": command, "result": self._words(4), "success": True}]
                    ),
                    "id": f"h{len(self.helper_messages)}",
                }
            )
            return
        call_id = f"toolu_{self.seed}_{self.calls}"
        kind = self.rng.choice(("run_commands", "read_files", "editor", "reply"))
        if kind == "reply":
            self.messages.append(self._assistant([{"type": "text", "text": self._words(20)}]))
            return
        path = f"{WORKSPACE}/src/{self.rng.choice(_WORDS)}.py"
        output = "\n".join(self._words(8) for _ in range(self.rng.randint(1, 12)))
        if kind == "run_commands":
            tool_input: Any = {"commands": [f"pytest -q {path}"]}
            result: Any = [{"query": f"pytest -q {path}", "result": output, "success": True}]
        elif kind == "read_files":
            tool_input = {"files": [{"path": path}]}
            result = [{"query": path, "result": output, "success": True}]
        else:
            tool_input = {"command": "str_replace", "path": path, "old_text": "a", "new_text": self._words(3)}
            result = orjson.dumps({"query": f"edit:{path}", "result": f"Edited {path}", "success": True}).decode()
        self.messages.append(
            self._assistant(
                [
                    {"type": "text", "text": self._words(6)},
                    {"type": "tool_use", "id": call_id, "name": kind, "input": tool_input},
                ]
            )
        )
        self.messages.append(self._result(call_id, kind, result))

    def _result(self, call_id: str, name: str, result: Any) -> dict[str, Any]:
        return {
            "id": f"r{len(self.messages)}",
            "role": "user",
            "ts": self.now_ms,
            "content": [{"type": "tool_result", "tool_use_id": call_id, "name": name, "content": result}],
        }

    def _assistant(self, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"a{len(self.messages)}",
            "role": "assistant",
            "ts": self.now_ms,
            "content": content,
            "metrics": {
                "inputTokens": 900,
                "outputTokens": 40,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "cost": 0.01,
            },
        }

    def edit_earlier(self) -> None:
        """Change the text of an earlier assistant message (a step changes in place)."""
        self.edits += 1
        assistants = [m for m in self.messages if m["role"] == "assistant"]
        if assistants:
            target = self.rng.choice(assistants)
            target["content"][0]["text"] = f"{self._words(4)} (edit {self.edits})"

    def restore(self) -> None:
        """A checkpoint restore: the last few messages disappear."""
        keep = max(3 if self.with_helper else 1, len(self.messages) - self.rng.randint(1, 4))
        del self.messages[keep:]
        del self.helper_messages[max(1, len(self.helper_messages) - 2) :]

    def document(self) -> dict[str, Any]:
        return {
            "version": 1,
            "updated_at": "2026-09-21T14:00:00.000Z",
            "agent": "lead",
            "sessionId": self.session_id,
            "origin": {"source": "cli", "mode": "user", "version": "3.0.65"},
            "messages": self.messages,
        }

    def manifest(self) -> dict[str, Any]:
        manifest: dict[str, Any] = {
            "version": 1,
            "session_id": self.session_id,
            "source": "cli",
            "started_at": "2026-09-21T14:00:00.000Z",
            "status": self.status,
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "cwd": WORKSPACE,
            "workspace_root": WORKSPACE,
        }
        if self.status == "completed":
            manifest |= {"ended_at": "2026-09-21T15:00:00.000Z", "exit_code": 0}
        return manifest

    def write(self, root: Path, *, manifest: bool = True) -> None:
        folder = root / self.session_id
        folder.mkdir(parents=True, exist_ok=True)
        write_in_place(
            folder / f"{self.session_id}.messages.json", orjson.dumps(self.document(), option=orjson.OPT_INDENT_2)
        )
        if manifest:
            write_in_place(
                folder / f"{self.session_id}.json", orjson.dumps(self.manifest(), option=orjson.OPT_INDENT_2)
            )
        if self.with_helper:
            helper = {"version": 1, "agent": "subagent", "taskType": "subagent_task", "messages": self.helper_messages}
            write_in_place(folder / f"{self.helper_id}.messages.json", orjson.dumps(helper, option=orjson.OPT_INDENT_2))


def synthetic_id(index: int) -> str:
    return f"{T0_MS + index * 1000}_s{index:04d}"


def write_synthetic(root: Path, count: int, *, grows: int) -> None:
    """``count`` synthetic sessions under ``root`` (``synthetic_id(0)`` on), each grown ``grows`` times."""
    for index in range(count):
        session = Synthetic(synthetic_id(index), seed=index)
        for _ in range(grows):
            session.grow()
        session.write(root)


# -- sitecustomize hooks loaded into the real postrun process -----------------------------


def install_sitecustomize(folder: Path, source: str, env: dict[str, str]) -> None:
    """Put ``source`` as ``sitecustomize.py`` in ``folder`` and on the process's PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(source)
    # Prepended: a PYTHONPATH already set (a checkout run through a shared venv) still applies.
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(folder), env.get("PYTHONPATH")) if part)
