"""Turning the store's records into the mirror's rows: pure functions, no I/O.

Every record and text column passes the one redactor first (``Scrub``), unless the user opted
out (``mirror_redact = false``): the mirror then holds what a redacted export shows, secrets
masked, flags' reasons quoting only masked matches. Paths are kept as they are (the mirror
names the host and the user in every row anyway).

PostgreSQL refuses U+0000 in ``text`` and ``jsonb``; such characters (a binary tool output,
an id an agent's file gives) become U+FFFD in the mirror, in every column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from postrun.review.redact import RULES_VERSION, Redactor
from postrun.store.outbox import HistoryRow, Keyed, SessionRow, StepChange, mirrored_text

NOT_REDACTED = "none"  # sessions.redaction of what was pushed with mirror_redact = false (or before v2)


@dataclass(frozen=True, slots=True)
class Origin:
    """The machine a row comes from: the store's random id, the host name, the OS user."""

    machine_id: str
    host: str
    os_user: str

    @property
    def columns(self) -> tuple[str, str, str]:
        return (self.machine_id, self.host, self.os_user)


def redaction_of(redact: bool) -> str:
    """What ``sessions.redaction`` records: the redactor's rules, or ``none``."""
    return RULES_VERSION if redact else NOT_REDACTED


@dataclass(frozen=True, slots=True)
class Scrub:
    """The redactor the mirror's rows pass (None: sent as stored)."""

    redactor: Redactor | None

    @classmethod
    def of(cls, redact: bool) -> Scrub:
        return cls(Redactor() if redact else None)

    @property
    def redaction(self) -> str:
        return redaction_of(self.redactor is not None)

    def json(self, text: str, where: str) -> str:
        return pg_json(text if self.redactor is None else self.redactor.json(text, where))

    def text(self, value: str | None, where: str) -> str | None:
        if value is None or self.redactor is None:
            return pg_text(value)
        return pg_text(self.redactor.text(value, where))

    def record(self, text: str, where: str) -> dict[str, Any]:
        record: dict[str, Any] = orjson.loads(text)
        return record if self.redactor is None else self.redactor.value(record, where)


def pg_text(value: str | None) -> str | None:
    return None if value is None else mirrored_text(value)


def pg_key(key: str | int) -> str | int:
    """A record's key as the mirror holds it (``pg_text``)."""
    return mirrored_text(key) if isinstance(key, str) else key


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


def session_values(origin: Origin, session_id: str, row: SessionRow, scrub: Scrub) -> tuple[Any, ...]:
    record = scrub.record(row.record, "session")
    cost = (record.get("metrics") or {}).get("cost_usd")
    return (
        *origin.columns,
        session_id,
        row.agent,
        row.started_at,
        row.ended_at,
        pg_text((record.get("workspace") or {}).get("root")),
        scrub.text(row.model, "session model"),
        scrub.text(row.provider, "session provider"),
        scrub.text(row.agent_title, "session title"),
        scrub.text(row.agent_status, "session status"),
        scrub.text(row.git_branch, "session git branch"),
        cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        pg_json(orjson.dumps(record).decode()),
        row.digest,
        pg_text(row.captured_on),
        row.ingested_at,
        row.updated_at,
        scrub.redaction,
    )


_BIGINT = 2**63


def step_values(origin: Origin, session_id: str, step: StepChange, scrub: Scrub) -> tuple[Any, ...]:
    """The step's typed columns, its payload, and the rest of the record."""
    record = scrub.record(step.record, f"step {step.id}")
    payload = record.pop("payload", {})
    command = payload.get("command") if record.get("type") == "command" else None
    exit_code = payload.get("exit_code")
    if not (isinstance(exit_code, int) and not isinstance(exit_code, bool) and -_BIGINT <= exit_code < _BIGINT):
        exit_code = None
    path = payload.get("path")
    return (
        *origin.columns,
        session_id,
        mirrored_text(step.id),
        step.seq,
        mirrored_text(step.turn_id),
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


def keyed_values(origin: Origin, session_id: str, row: Keyed, kind: str, scrub: Scrub) -> tuple[Any, ...]:
    """A segment, actor or turn: its key, record and digest (and a turn's position)."""
    record = scrub.json(row.record, f"{kind} {row.key}")
    return (
        *origin.columns,
        session_id,
        pg_key(row.key),
        record,
        row.digest,
        *((row.index,) if kind == "turns" else ()),
    )


def history_values(origin: Origin, session_id: str, entry: HistoryRow, scrub: Scrub) -> tuple[Any, ...]:
    return (
        *origin.columns,
        session_id,
        entry.id,
        entry.kind,
        pg_text(entry.record_id),
        scrub.json(entry.record, f"history {entry.kind} {entry.record_id}"),
        entry.digest,
        entry.reason,
        entry.replaced_at,
    )
