"""Turning the store's records into the mirror's rows: pure functions, no I/O.

PostgreSQL refuses U+0000 in ``text`` and ``jsonb``; such characters (a binary tool output)
become U+FFFD in the mirror, the one place it differs from the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from postrun.store.outbox import HistoryRow, SessionRow, StepChange


@dataclass(frozen=True, slots=True)
class Origin:
    """The machine a row comes from: the store's random id, the host name, the OS user."""

    machine_id: str
    host: str
    os_user: str

    @property
    def columns(self) -> tuple[str, str, str]:
        return (self.machine_id, self.host, self.os_user)


def pg_text(value: str | None) -> str | None:
    return None if value is None else value.replace("\x00", "\ufffd")


def pg_json(text: str) -> str:
    """JSON text PostgreSQL's jsonb accepts (``\\u0000`` escapes replaced)."""
    if "\\u0000" not in text:
        return text
    return orjson.dumps(_without_nul(orjson.loads(text))).decode()


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    return value


def session_values(origin: Origin, session_id: str, row: SessionRow) -> tuple[Any, ...]:
    record = orjson.loads(row.record)
    cost = (record.get("metrics") or {}).get("cost_usd")
    return (
        *origin.columns,
        session_id,
        row.agent,
        row.started_at,
        row.ended_at,
        pg_text((record.get("workspace") or {}).get("root")),
        pg_text(row.model),
        pg_text(row.provider),
        pg_text(row.agent_title),
        pg_text(row.agent_status),
        pg_text(row.git_branch),
        cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        pg_json(row.record),
        row.digest,
        pg_text(row.captured_on),
        row.ingested_at,
        row.updated_at,
    )


_BIGINT = 2**63


def step_values(origin: Origin, session_id: str, step: StepChange) -> tuple[Any, ...]:
    """The step's typed columns, its payload, and the rest of the record."""
    record = orjson.loads(step.record)
    payload = record.pop("payload", {})
    command = payload.get("command") if record.get("type") == "command" else None
    exit_code = payload.get("exit_code")
    if not (isinstance(exit_code, int) and not isinstance(exit_code, bool) and -_BIGINT <= exit_code < _BIGINT):
        exit_code = None
    path = payload.get("path")
    return (
        *origin.columns,
        session_id,
        step.id,
        step.seq,
        step.turn_id,
        step.at,
        record["type"],
        record["outcome"],
        record["decision"],
        pg_text(command) if isinstance(command, str) else None,
        exit_code,
        pg_text(path) if isinstance(path, str) else None,
        pg_json(orjson.dumps(record.get("flags", [])).decode()),
        pg_json(orjson.dumps(payload).decode()),
        pg_json(orjson.dumps(record).decode()),
        step.digest,
    )


def history_values(origin: Origin, session_id: str, entry: HistoryRow) -> tuple[Any, ...]:
    return (
        *origin.columns,
        session_id,
        entry.id,
        entry.kind,
        pg_text(entry.record_id),
        pg_json(entry.record),
        entry.digest,
        entry.reason,
        entry.replaced_at,
    )
