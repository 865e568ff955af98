"""Hand-built v1.2 records for store tests that must not depend on an adapter."""

from __future__ import annotations

from typing import Any

from postrun.records import MappedSession, SessionExtras, SourceFile, StepRow

SESSION_ID = "1790000000000_store"


def session_record(session_id: str = SESSION_ID, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": session_id,
        "agent": {"kind": "cline", "version": "4.1.17", "format_version": "1"},
        "workspace": {"root": "/home/dev/app"},
        "started_at": "2026-09-21T14:13:19.500Z",
        "source": f"/home/dev/.cline/data/sessions/{session_id}",
    }
    record.update(changes)
    return record


def message_step(
    seq: int,
    text: str,
    *,
    role: str = "assistant",
    session_id: str = SESSION_ID,
    turn_id: str = "turn:1",
    step_id: str | None = None,
) -> dict[str, Any]:
    return {
        "id": step_id or f"msg_{seq}#0",
        "session_id": session_id,
        "segment_index": 0,
        "turn_id": turn_id,
        "actor_id": "root",
        "seq": seq,
        "at": f"2026-09-21T14:13:{20 + seq % 40:02d}.000Z",
        "type": "message",
        "decision": "n/a",
        "outcome": "ok",
        "content_status": "inline",
        "channels": ["conversation"],
        "flags": [],
        "payload": {"role": role, "text": text},
    }


def command_step(
    seq: int,
    command: str,
    stdout: str,
    *,
    exit_code: int | None = None,
    session_id: str = SESSION_ID,
    step_id: str | None = None,
) -> dict[str, Any]:
    failed = exit_code not in (None, 0)
    record: dict[str, Any] = {
        "id": step_id or f"toolu_{seq}#0",
        "session_id": session_id,
        "segment_index": 0,
        "turn_id": "turn:1",
        "actor_id": "root",
        "seq": seq,
        "at": f"2026-09-21T14:13:{20 + seq % 40:02d}.000Z",
        "type": "command",
        "decision": "auto",
        "outcome": "failed" if failed else "ok",
        "content_status": "inline",
        "channels": ["conversation"],
        "flags": [],
        "payload": {"command": command, "stdout": stdout, "cwd": "/home/dev/app"},
    }
    if exit_code is not None:
        record["payload"]["exit_code"] = exit_code
    if failed:
        record["error"] = {"type": "cline_tool_error", "message": f"Command exited with code {exit_code}"}
    return record


def mapped_session(
    steps: list[dict[str, Any]],
    *,
    session_id: str = SESSION_ID,
    session: dict[str, Any] | None = None,
    status: str = "running",
    approvals: dict[str, Any] | None = None,
) -> MappedSession:
    turn_ids = sorted({step["turn_id"] for step in steps} or {"turn:1"})
    turns = [
        {
            "id": turn_id,
            "session_id": session_id,
            "segment_index": 0,
            "actor_id": "root",
            "index": int(turn_id.split(":")[1]),
            "started_at": "2026-09-21T14:13:19.500Z",
            "step_ids": [s["id"] for s in sorted(steps, key=lambda s: s["seq"]) if s["turn_id"] == turn_id],
        }
        for turn_id in turn_ids
    ]
    return MappedSession(
        agent="cline",
        session=session or session_record(session_id),
        segments=[{"index": 0, "start_reason": "start", "started_at": "2026-09-21T14:13:19.500Z", "source_files": []}],
        actors=[{"id": "root", "type": "root", "label": "lead"}],
        turns=turns,
        steps=[StepRow.build(step) for step in steps],
        extras=SessionExtras(model="claude-sonnet-4-6", provider="anthropic", agent_status=status),
        approvals=approvals if approvals is not None else {"kind": "none"},
        source_files=(SourceFile(f"/x/{session_id}.messages.json", 10, 1, 1),),
    )
