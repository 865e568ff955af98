"""Claude Code transcripts made by hand, line by line, in the shapes of the real files.

Every line starts as a copy of a line the real CLI wrote (``tests/fixtures/claude-code-real``)
with only what a case needs changed: ids, times, text, tool input and result. Lines are
written as Claude Code writes them (``JSON.stringify``: compact, one per line).
"""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code-real"
_A = (
    REAL
    / "a_read_edit_write/claude/projects/-home-dev-work-a-read-edit-write/e144040e-bd9b-4030-8647-79a28a2ca005.jsonl"
)
_B = REAL / "b_bash/claude/projects/-home-dev-work-b-bash/d2ef0479-efa6-4291-bcf7-a23f2a9dd0ca.jsonl"
_E = REAL / "e_subagents/claude/projects/-home-dev-work-e-subagents/973c7bbe-87bd-4c67-a1d0-eb15e8e8c39a"
MISSING: Any = object()
ACCEPT = {"decision": "accept", "source": "config", "reasonType": "rule", "ruleSource": "cliArg"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _templates() -> dict[str, dict[str, Any]]:
    a, b = _lines(_A), _lines(_B)
    sub = _lines(_E / "subagents" / "agent-a81770962b3030069.jsonl")
    return {
        "enqueue": a[0],
        "dequeue": a[1],
        "prompt": a[2],
        "attachment": a[4],
        "atis": a[8],
        "last-prompt": a[13],
        "api-request": a[18],
        "tools-used": a[19],
        "assistant": a[20],
        "tool_result": a[24],
        "cost-state": a[52],
        "notification": b[57],
        "sub-prompt": sub[0],
        "sub-assistant": sub[13],
        "sub-result": sub[15],
    }


TEMPLATES = _templates()
META = json.loads((_E / "subagents" / "agent-a81770962b3030069.meta.json").read_text())


def dumps(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class Transcript:
    """One transcript being written: a main one, or a sub-agent's (``agent_id``)."""

    def __init__(
        self,
        session_id: str,
        cwd: str,
        start: str = "2026-12-02T10:00:00.000Z",
        *,
        agent_id: str | None = None,
        version: str = "2.1.332",
        seed: str = "",
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.clock = datetime.fromisoformat(start)
        self.agent_id = agent_id
        self.version = version
        self.seed = seed or session_id + (agent_id or "")
        self.count = 0
        self.parent: str | None = None
        self.prompt_id: str | None = None
        self.records: list[dict[str, Any] | bytes] = []

    # -- plumbing ---------------------------------------------------------------------------

    def uuid(self, name: str = "") -> str:
        self.count += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/{self.count}/{name}"))

    def tick(self, ms: int = 100) -> str:
        self.clock += timedelta(milliseconds=ms)
        return self.clock.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def _message(self, kind: str, **changes: Any) -> dict[str, Any]:
        record = copy.deepcopy(TEMPLATES[kind])
        record["sessionId"] = self.session_id
        if "cwd" in record:
            record["cwd"] = self.cwd
        if "version" in record:
            record["version"] = self.version
        if "uuid" in record:
            record["uuid"] = changes.pop("uuid", None) or self.uuid(kind)
            record["parentUuid"] = self.parent
            self.parent = record["uuid"]
        if "timestamp" in record:
            record["timestamp"] = self.tick()
        if self.agent_id is not None and "isSidechain" in record:
            record["isSidechain"] = True
            record["agentId"] = self.agent_id
        if "promptId" in record and self.prompt_id is not None:
            record["promptId"] = self.prompt_id
        for key, value in changes.items():
            if value is MISSING:
                record.pop(key, None)
            else:
                record[key] = value
        self.records.append(record)
        return record

    def raw(self, record: dict[str, Any] | bytes) -> None:
        """A line as given: any record, or bytes that are not JSON at all."""
        self.records.append(record)

    def data(self) -> bytes:
        return b"".join(record if isinstance(record, bytes) else dumps(record) for record in self.records)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.data())
        return path

    # -- records --------------------------------------------------------------------------

    def enqueue(self, text: str) -> None:
        self._message("enqueue", content=text, timestamp=self.tick())
        self._message("dequeue", timestamp=self.tick())

    def metadata(self, *, prompt: str = "") -> None:
        """What Claude Code writes around a request: an attachment, a replayed request, a latch."""
        self._message("attachment")
        self._message("atis")
        self._message("last-prompt", lastPrompt=prompt, leafUuid=self.parent)
        self._message("api-request", id=self.uuid("request"), timestamp=self.tick())

    def prompt(self, text: Any, *, mode: str = "default", **changes: Any) -> str:
        """A prompt line (``content`` a string, or a list of blocks); returns its uuid."""
        self.prompt_id = changes.pop("promptId", None) or self.uuid("prompt")
        record = self._message(
            "sub-prompt" if self.agent_id is not None else "prompt",
            message={"role": "user", "content": text},
            promptId=self.prompt_id,
            **({} if self.agent_id is not None else {"permissionMode": mode}),
            **changes,
        )
        return str(record["uuid"])

    def notification(self, text: str, **changes: Any) -> str:
        """A ``<task-notification>`` user line (a background task ended)."""
        record = self._message(
            "notification", message={"role": "user", "content": text}, promptId=self.uuid("prompt"), **changes
        )
        return str(record["uuid"])

    def injected(self, text: str, **changes: Any) -> str:
        """A user line of Claude Code's own (a slash command's lines, a summary): a prompt line's
        shape without what only a sent prompt has."""
        plain = {key: MISSING for key in ("promptSource", "turnOrigin", "turnPosition", "sentAtMs", "rowSource")}
        record = self._message("prompt", message={"role": "user", "content": text}, **{**plain, **changes})
        return str(record["uuid"])

    def assistant(
        self, message_id: str, blocks: list[dict[str, Any]], usage: tuple[int, int] = (1000, 50), **changes: Any
    ) -> str:
        """One assistant line holding ``blocks`` (Claude Code writes one block a line)."""
        record = self._message("sub-assistant" if self.agent_id is not None else "assistant", **changes)
        message = record["message"]
        message["id"] = message_id
        message["content"] = blocks
        message["usage"]["input_tokens"], message["usage"]["output_tokens"] = usage
        message["stop_reason"] = "tool_use" if any(block.get("type") == "tool_use" for block in blocks) else "end_turn"
        return str(record["uuid"])

    def text(self, message_id: str, text: str, **options: Any) -> str:
        return self.assistant(message_id, [{"type": "text", "text": text}], **options)

    def call(self, message_id: str, tool_id: str, name: str, tool_input: dict[str, Any], **options: Any) -> str:
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        return self.assistant(message_id, [block], **options)

    def result(
        self,
        tool_id: str,
        content: Any,
        *,
        is_error: bool | None = None,
        tool_use_result: Any = MISSING,
        permission: Any = ACCEPT,
        denial: str | None = None,
        **changes: Any,
    ) -> str:
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error is not None:
            block["is_error"] = is_error
        if self.agent_id is not None:
            tool_use_result = MISSING  # sub-agent transcripts carry no toolUseResult
        record = self._message(
            "sub-result" if self.agent_id is not None else "tool_result",
            message={"role": "user", "content": [block]},
            toolUseResult=tool_use_result,
            permissionDecision=permission,
            **changes,
        )
        if denial is not None:
            record["toolDenialKind"] = denial
        if self.agent_id is None:
            record["sourceToolAssistantUUID"] = record["parentUuid"]
        return str(record["uuid"])

    def cost_state(self, total: float, input_tokens: int = 0, output_tokens: int = 0) -> None:
        record = self._message("cost-state", totalCostUSD=total)
        usage = next(iter(record["modelUsage"].values()))
        usage.update(inputTokens=input_tokens, outputTokens=output_tokens, costUSD=total)

    def compact_boundary(self, pre_tokens: int = 5000) -> None:
        """The ``system`` record ``/compact`` writes: the chain starts again after it."""
        logical = self.parent
        self.parent = None
        self._message(
            "attachment",
            type="system",
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            level="info",
            logicalParentUuid=logical,
            compactMetadata={"trigger": "manual", "preTokens": pre_tokens, "postTokens": 900},
            attachment=MISSING,
            rendered=MISSING,
            renderedRole=MISSING,
        )


def meta(tool_use_id: str, description: str, *, depth: int = 1, shape: str = "foreground") -> dict[str, Any]:
    """A sub-agent's ``meta.json``, in the real file's shape."""
    return {**META, "toolUseId": tool_use_id, "description": description, "spawnDepth": depth, "requestShape": shape}
