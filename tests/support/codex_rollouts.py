"""Codex rollouts written line by line in the shapes Codex CLI 0.171.0 writes (see the real
cases in tests/fixtures/codex-real/): for hand-made cases and unit tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

T0 = 1_796_152_830_000  # epoch ms: 2026-12-01T19:20:30Z


def iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class RolloutWriter:
    """One thread's rollout. Every method appends one line (a few for a whole call)."""

    def __init__(
        self,
        thread_id: str,
        *,
        cwd: str = "/home/dev/work/app",
        start_ms: int = T0,
        cli_version: str | None = "0.171.0",
        parent: str | None = None,
        session_id: str | None = None,
        nickname: str | None = None,
        guardian: bool = False,
        depth: int = 1,
        repo: str | None = "https://example.com/dev/app.git",
        meta: bool = True,
    ) -> None:
        self.thread_id = thread_id
        self.cwd = cwd
        self.clock = start_ms
        self.lines: list[dict[str, Any]] = []
        self.start_ms = start_ms
        if not meta:
            return
        payload: dict[str, Any] = {
            "session_id": session_id or parent or thread_id,
            "id": thread_id,
            "timestamp": iso(start_ms),
            "cwd": cwd,
            "originator": "codex_exec",
            "model_provider": "mock",
            "history_mode": "paginated",
            "base_instructions": {"text": "You are a coding agent running in the Codex CLI."},
        }
        if cli_version is not None:
            payload["cli_version"] = cli_version
        if repo is not None:
            payload["git"] = {"commit_hash": "f18e69ba", "branch": "main", "repository_url": repo}
        if guardian:
            payload.update(parent_thread_id=parent, source={"subagent": {"other": "guardian"}})
            payload["thread_source"] = "guardian_review"
        elif parent is not None:
            spawn = {"parent_thread_id": parent, "depth": depth, "agent_path": None, "agent_nickname": nickname}
            payload.update(parent_thread_id=parent, source={"subagent": {"thread_spawn": spawn}})
            payload.update(thread_source="subagent", agent_nickname=nickname)
        else:
            payload.update(source="exec", thread_source="user")
        self.add("session_meta", payload)

    # -- the envelope ------------------------------------------------------------------

    def add(self, kind: str, payload: dict[str, Any], *, step_ms: int = 10) -> dict[str, Any]:
        self.clock += step_ms
        line = {"timestamp": iso(self.clock), "ordinal": len(self.lines), "type": kind, "payload": payload}
        self.lines.append(line)
        return line

    def event(self, event_type: str, /, **payload: Any) -> dict[str, Any]:
        return self.add("event_msg", {"type": event_type, **payload})

    def item(self, turn_id: str, item: dict[str, Any], *, took_ms: int = 5) -> dict[str, Any]:
        started = self.clock + 1
        return self.event(
            "item_completed",
            thread_id=self.thread_id,
            turn_id=turn_id,
            item=item,
            started_at_ms=started,
            completed_at_ms=started + took_ms,
        )

    def response(self, payload: dict[str, Any], turn_id: str | None = None) -> dict[str, Any]:
        if turn_id is not None:
            payload = {**payload, "internal_chat_message_metadata_passthrough": {"turn_id": turn_id}}
        return self.add("response_item", payload)

    # -- turns -------------------------------------------------------------------------

    def task_started(
        self,
        turn_id: str,
        *,
        trigger: str = "exec",
        parent_turn: str | None = None,
        root_turn: str | None = None,
        mode: str = "default",
    ) -> None:
        attribution = {
            "turn_id": turn_id,
            "turn_trigger": trigger,
            "parent_turn_id": parent_turn,
            "initiating_agent_path": None,
            "root_turn_id": root_turn or turn_id,
        }
        self.event(
            "task_started",
            turn_attribution=attribution,
            turn_id=turn_id,
            root_turn_id=root_turn or turn_id,
            started_at=self.clock // 1000,
            model_context_window=258400,
            collaboration_mode_kind=mode,
        )

    def turn_context(self, turn_id: str, *, policy: str = "never", cwd: str | None = None) -> None:
        self.add(
            "turn_context",
            {
                "turn_id": turn_id,
                "root_turn_id": turn_id,
                "cwd": cwd or self.cwd,
                "approval_policy": policy,
                "approvals_reviewer": "user",
                "sandbox_policy": {"type": "workspace-write"},
                "model": "mock-model",
            },
        )

    def settings(self) -> None:
        self.event("thread_settings_applied", thread_id=self.thread_id, thread_settings={"model": "mock-model"})

    def world_state(self) -> None:
        self.add("world_state", {"full": True, "state": {"agents_md": {}}})

    def begin(self, turn_id: str, *, policy: str = "never", first: bool = True, **task: Any) -> None:
        """What Codex writes when a process starts a turn: a resume writes its settings first."""
        if not first:
            self.settings()
        self.task_started(turn_id, **task)
        self.response({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<x>"}]})
        self.response(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"}
                ],
            }
        )
        self.world_state()
        self.turn_context(turn_id, policy=policy)
        if first:
            self.settings()

    def task_complete(self, turn_id: str, *, aborted: bool = False) -> None:
        if aborted:
            self.event("turn_aborted", turn_id=turn_id, reason="interrupted")
        else:
            self.event("task_complete", turn_id=turn_id, root_turn_id=turn_id, last_agent_message=None)

    # -- what was said -----------------------------------------------------------------

    def user(self, item_id: str, body: str, turn_id: str) -> None:
        self.response(
            {
                "type": "message",
                "id": f"msg_{item_id}",
                "role": "user",
                "content": [{"type": "input_text", "text": body}],
            }
        )
        self.item(
            turn_id,
            {"type": "UserMessage", "id": item_id, "content": [{"type": "text", "text": body, "text_elements": []}]},
        )

    def agent(self, item_id: str, body: str, turn_id: str) -> None:
        self.item(turn_id, {"type": "AgentMessage", "id": item_id, "content": [{"type": "Text", "text": body}]})
        self.response(
            {
                "type": "message",
                "status": "completed",
                "id": item_id,
                "role": "assistant",
                "content": [{"type": "output_text", "text": body, "annotations": []}],
            }
        )

    def reasoning(self, item_id: str, turn_id: str, summary: list[str], raw: list[str] | None = None) -> None:
        self.response(
            {
                "type": "reasoning",
                "id": item_id,
                "summary": [{"type": "summary_text", "text": piece} for piece in summary],
                "encrypted_content": "gAAAA",
            }
        )
        self.item(turn_id, {"type": "Reasoning", "id": item_id, "summary_text": summary, "raw_content": raw or []})

    def tokens(self, response_id: str, turn_id: str, *, input_tokens: int, output: int, cached: int = 0) -> None:
        usage = {
            "input_tokens": input_tokens,
            "cached_input_tokens": cached,
            "cache_write_input_tokens": 0,
            "output_tokens": output,
            "reasoning_output_tokens": 0,
            "total_tokens": input_tokens + output,
        }
        running = {key: value * 100 for key, value in usage.items()}  # cumulative totals: never summed
        self.add(
            "token_usage_record",
            {
                "thread_id": self.thread_id,
                "turn_id": turn_id,
                "response_id": response_id,
                "usage": usage,
                "turn_token_usage": running,
                "thread_token_usage": running,
            },
        )
        self.event("token_count", info={"total_token_usage": running, "last_token_usage": usage})

    # -- calls -------------------------------------------------------------------------

    def call(self, call_id: str, name: str, arguments: dict[str, Any], turn_id: str, **extra: Any) -> None:
        payload = {"type": "function_call", "status": "completed", "id": f"fc_{call_id}", "name": name}
        payload.update(arguments=json.dumps(arguments), call_id=call_id, **extra)
        self.response(payload, turn_id)

    def output(self, call_id: str, output: Any, turn_id: str) -> None:
        self.response(
            {"type": "function_call_output", "id": f"fco_{call_id}", "call_id": call_id, "output": output}, turn_id
        )

    def exec_output(self, call_id: str, exit_code: int, body: str, turn_id: str) -> None:
        envelope = (
            f"Chunk ID: 0a1b2c\nWall time: 0.0100 seconds\nProcess exited with code {exit_code}\n"
            f"Original token count: 3\nOutput:\n{body}"
        )
        self.output(call_id, envelope, turn_id)

    def command(
        self,
        call_id: str,
        cmd: str,
        turn_id: str,
        *,
        output: str = "",
        exit_code: int = 0,
        status: str | None = None,
        workdir: str | None = None,
        **arguments: Any,
    ) -> None:
        """An exec_command call as Codex writes it: the call, its item, its output."""
        args: dict[str, Any] = {"cmd": cmd, **arguments}
        if workdir is not None:
            args["workdir"] = workdir
        self.call(call_id, "exec_command", args, turn_id)
        self.item(
            turn_id,
            {
                "type": "CommandExecution",
                "id": call_id,
                "process_id": "4242",
                "command": ["/bin/bash", "-lc", cmd],
                "cwd": f"file://{workdir or self.cwd}",
                "source": "unified_exec_startup",
                "status": status or ("completed" if exit_code == 0 else "failed"),
                "aggregated_output": output,
                "exit_code": exit_code,
                "duration": {"secs": 0, "nanos": 1000},
            },
        )
        self.exec_output(call_id, exit_code, output, turn_id)

    def patch(self, call_id: str, turn_id: str, changes: dict[str, Any], *, status: str = "completed") -> None:
        self.call(
            call_id, "exec_command", {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n"}, turn_id
        )
        self.item(
            turn_id,
            {"type": "FileChange", "id": call_id, "changes": changes, "status": status, "stdout": "", "stderr": ""},
        )
        self.output(call_id, "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nOutput:\nSuccess.\n", turn_id)

    def spawn(self, call_id: str, turn_id: str, child_id: str, nickname: str, task: str) -> None:
        self.call(call_id, "spawn_agent", {"message": task}, turn_id, namespace="multi_agent_v1")
        self.item(
            turn_id,
            {
                "type": "CollabAgentToolCall",
                "id": call_id,
                "tool": "spawn_agent",
                "status": "completed",
                "sender_thread_id": self.thread_id,
                "receiver_thread_ids": [child_id],
                "receiver_agents": [{"thread_id": child_id, "agent_nickname": nickname}],
                "prompt": task,
            },
        )
        self.output(call_id, json.dumps({"agent_id": child_id, "nickname": nickname}), turn_id)

    def wait(self, call_id: str, turn_id: str, child_id: str, answer: str) -> None:
        self.call(
            call_id, "wait_agent", {"targets": [child_id], "timeout_ms": 60000}, turn_id, namespace="multi_agent_v1"
        )
        states = {child_id: {"completed": answer}}
        self.item(
            turn_id,
            {
                "type": "CollabAgentToolCall",
                "id": call_id,
                "tool": "wait",
                "status": "completed",
                "sender_thread_id": self.thread_id,
                "receiver_thread_ids": [child_id],
                "agents_states": states,
            },
        )
        self.output(call_id, json.dumps({"status": states, "timed_out": False}), turn_id)

    # -- files -------------------------------------------------------------------------

    def name(self) -> str:
        stamp = datetime.fromtimestamp(self.start_ms / 1000, UTC).strftime("%Y-%m-%dT%H-%M-%S")
        return f"rollout-{stamp}-{self.thread_id}.jsonl"

    def folder(self) -> str:
        return datetime.fromtimestamp(self.start_ms / 1000, UTC).strftime("%Y/%m/%d")

    def data(self, lines: int | None = None) -> bytes:
        chosen = self.lines if lines is None else self.lines[:lines]
        return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in chosen)

    def write(self, sessions: Path, *, compressed: bool = False, flat: bool = False, lines: int | None = None) -> Path:
        """Write it where Codex would under ``sessions`` (``flat``: straight in it, as the archive)."""
        folder = sessions if flat else sessions / self.folder()
        folder.mkdir(parents=True, exist_ok=True)
        data = self.data(lines)
        if compressed:
            path = folder / (self.name() + ".zst")
            path.write_bytes(zstandard.ZstdCompressor().compress(data))
        else:
            path = folder / self.name()
            path.write_bytes(data)
        return path


def delegating(root_id: str, child_id: str) -> tuple[RolloutWriter, RolloutWriter]:
    """A root thread whose turn ``t1`` started a sub-agent (Dirac), and the sub-agent's turn so
    far: its prompt and one command."""
    root = RolloutWriter(root_id)
    child = RolloutWriter(child_id, parent=root_id, nickname="Dirac", start_ms=root.clock + 100)
    root.begin("t1")
    root.user("u1", "MARK: delegate", "t1")
    root.spawn("s1", "t1", child_id, "Dirac", "SUB: look")
    child.task_started("ct1", parent_turn="t1", root_turn="t1")
    child.user("cu1", "SUB: look", "ct1")
    child.command("cc1", "ls", "ct1", output="x\n")
    return root, child
