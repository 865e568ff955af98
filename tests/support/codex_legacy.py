"""Codex rollouts from before items (the history only), in the shapes older Codex CLIs wrote:
no ``item_completed``, no ``task_started`` / ``task_complete`` (Codex did not keep them then),
shell calls answered with a JSON ``{"output", "metadata": {"exit_code"}}`` text, apply_patch
as a freeform ``custom_tool_call``, the project instructions as "# AGENTS.md instructions for"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.codex_rollouts import T0, iso


class LegacyRollout:
    """One thread's rollout, written line by line."""

    def __init__(self, thread_id: str, *, cli_version: str = "0.46.0", cwd: str = "/home/dev/work/app") -> None:
        self.thread_id = thread_id
        self.cwd = cwd
        self.clock = T0
        self.lines: list[dict[str, Any]] = []
        meta = {"id": thread_id, "timestamp": iso(T0), "cwd": cwd, "originator": "codex_cli_rs"}
        self.add("session_meta", {**meta, "cli_version": cli_version, "source": "cli", "model_provider": "openai"})

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.clock += 10
        self.lines.append({"timestamp": iso(self.clock), "type": kind, "payload": payload})

    def user(self, *texts: str) -> None:
        content = [{"type": "input_text", "text": text} for text in texts]
        self.add("response_item", {"type": "message", "role": "user", "content": content})

    def assistant(self, text: str) -> None:
        content = [{"type": "output_text", "text": text}]
        self.add("response_item", {"type": "message", "role": "assistant", "content": content})

    def turn_context(self, policy: str = "on-request") -> None:
        self.add("turn_context", {"cwd": self.cwd, "approval_policy": policy, "model": "gpt-5-codex"})

    def shell(self, call_id: str, command: str, exit_code: int | None, output: str) -> None:
        """A ``shell`` call and its JSON answer; ``exit_code`` None: no answer (the process died)."""
        arguments = json.dumps({"command": ["bash", "-lc", command], "workdir": self.cwd})
        call = {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
        self.add("response_item", call)
        if exit_code is not None:
            self.output(call_id, exec_json(output, exit_code))

    def patch(self, call_id: str, patch: str, exit_code: int, output: str) -> None:
        call = {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch"}
        self.add("response_item", {**call, "input": patch})
        answer = {"type": "custom_tool_call_output", "call_id": call_id, "output": exec_json(output, exit_code)}
        self.add("response_item", answer)

    def output(self, call_id: str, output: str) -> None:
        self.add("response_item", {"type": "function_call_output", "call_id": call_id, "output": output})

    def write(self, sessions: Path) -> Path:
        folder = sessions / "2026" / "12" / "01"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-2026-12-01T19-20-30-{self.thread_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def exec_json(output: str, exit_code: int) -> str:
    """What an older Codex answered a shell or apply_patch call with."""
    return json.dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}})


AGENTS_MD = "# AGENTS.md instructions for /home/dev/work/app\n\n<INSTRUCTIONS>\nUse uv.\n</INSTRUCTIONS>"
ENVIRONMENT = "<environment_context>\n  <cwd>/home/dev/work/app</cwd>\n</environment_context>"
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"


def instructions_then_prompt(thread_id: str) -> LegacyRollout:
    """A rollout without items whose first user messages are Codex's (the project instructions,
    the environment), then the person's prompt (line 4) and the answer."""
    root = LegacyRollout(thread_id)
    root.user(AGENTS_MD)
    root.user(ENVIRONMENT)
    root.turn_context()
    root.user("MARK: fix the bug")
    root.assistant("Fixed.")
    return root


def pre_envelope_rollout(sessions: Path, thread_id: str) -> Path:
    """A rollout as Codex wrote it before its record envelope (mid 2025): a bare header, state
    markers, the history's items bare and without timestamps."""
    header = {"id": thread_id, "timestamp": iso(T0), "instructions": None, "git": {"branch": "main"}}
    shell = {"command": ["bash", "-lc", "ls"]}
    lines: list[dict[str, Any]] = [
        header,
        {"record_type": "state"},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": ENVIRONMENT}]},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "MARK: list"}]},
        {"record_type": "state"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Listing"}]},
        {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": json.dumps(shell), "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": exec_json("README.md\n", 0)},
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "One."}]},
        {"record_type": "state"},
    ]
    folder = sessions / "2025" / "08" / "20"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2025-08-20T13-20-47-{thread_id}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
