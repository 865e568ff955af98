"""A store built for the review inbox: sessions of three agent kinds, each with a known mix of
flags, failed commands, rejected steps and verdicts, written through the store's own writer.

``EXPECTED_ORDER`` is the order the inbox must show them in (the ones that need review first,
those with a danger flag before the others, newest first within each group).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from postrun.records import MappedSession
from postrun.store.db import Database
from postrun.store.verdicts import record_verdict
from postrun.store.write import upsert_session
from tests.support.builders import command_step, message_step, session_record
from tests.support.web import one_turn_session

NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
WORKSPACE = "/home/dev/inbox"
LONG_TITLE = (
    "Refactor the whole billing pipeline so that every invoice line is recomputed from the ledger, then "
    + "/home/dev/inbox/"
    + "very_long_directory_name_without_any_break_" * 4
    + " and explain every change you made in detail, with tests for each of them and a summary at the end " * 3
)


def _flag(kind: str, severity: str, reason: str) -> dict[str, str]:
    return {"kind": kind, "severity": severity, "reason": reason}


@dataclass(frozen=True)
class Planned:
    """One session of the inbox store: its id, agent, start hour and what its steps carry."""

    id: str
    agent: str
    hour: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    verdict: str | None = None
    title: str = ""
    ended: bool = True


def _session(plan: Planned, day: str = "2026-09-22") -> MappedSession:
    started = f"{day}T{plan.hour:02d}:00:00.000Z"
    steps = [message_step(0, plan.title or f"Prompt of {plan.id}", role="user", session_id=plan.id)]
    for seq, extra in enumerate(plan.steps, start=1):
        steps.append(
            {**command_step(seq, f"echo step {seq}", f"out {seq}\n", exit_code=0, session_id=plan.id), **extra}
        )
    for step in steps:
        step["at"] = started.replace(":00:00.000Z", f":{step['seq'] // 60:02d}:{step['seq'] % 60:02d}.000Z")
    fields: dict[str, Any] = {
        "started_at": started,
        "agent": {"kind": plan.agent, "version": "1.0.0"},
        "workspace": {"root": WORKSPACE},
    }
    if plan.ended:
        fields["ended_at"] = started.replace(":00:00.000Z", ":59:00.000Z")
    return one_turn_session(plan.id, steps, [], started=started, session=session_record(plan.id, **fields),
                            agent=plan.agent)  # fmt: skip


def _failed_command() -> dict[str, Any]:
    return {
        "outcome": "failed",
        "payload": {"command": "npm test", "stdout": "FAIL\n", "exit_code": 1, "cwd": WORKSPACE},
        "error": {"type": "tool_error", "message": "Command exited with code 1"},
        "flags": [_flag("failed", "info", "exit 1")],
    }


DANGER = {"flags": [_flag("dangerous_command", "danger", "rm -rf outside build output: rm -rf /home/dev")]}
SECRET = {"flags": [_flag("secret_in_output", "danger", "GitHub token in stdout: ghp_****")]}
SENSITIVE = {
    "type": "read",
    "payload": {"path": "/home/dev/.ssh/id_ed25519"},
    "flags": [_flag("sensitive_read", "warn", "reads a credentials file: /home/dev/.ssh/id_ed25519")],
}
REJECTED = {"decision": "rejected", "flags": [_flag("rejected", "warn", "rejected by the user")]}
FAILED_READ = {
    "type": "read",
    "outcome": "failed",
    "payload": {"path": "/home/dev/inbox/missing.txt"},
    "error": {"type": "tool_error", "message": "no such file"},
    "flags": [_flag("failed", "info", "tool_error: no such file")],
}
PLAIN: dict[str, Any] = {}

# (needs review, danger first; then the rest, newest first)
A = Planned("1790100010000_ccdgr", "claude-code", 10, [PLAIN, DANGER] + [PLAIN] * 78, title=LONG_TITLE)
G = Planned("1790100009000_cldsc", "cline", 9, [PLAIN, SENSITIVE, PLAIN, SECRET])
C = Planned("1790100012000_clrej", "cline", 12, [PLAIN, REJECTED])
B = Planned("1790100011000_cxfal", "codex", 11, [_failed_command()])
H = Planned("1790100016000_cxfrd", "codex", 16, [FAILED_READ], ended=False)
F = Planned("1790100015000_cxsen", "codex", 15, [SENSITIVE])
E = Planned("1790100014000_ccpln", "claude-code", 14, [PLAIN, PLAIN])
D = Planned("1790100013000_clrev", "cline", 13, [DANGER], verdict="looks_good")
PLANNED = (A, G, C, B, H, F, E, D)
EXPECTED_ORDER = [plan.id for plan in PLANNED]
FILLERS = 60  # older plain cline sessions: the list has two pages
FIRST_FLAGGED = {A.id: 2, G.id: 2, C.id: 2, B.id: 1, H.id: 1, F.id: 1, D.id: 1}


def filler_id(number: int) -> str:
    return f"17900000{number:05d}_fill{number % 10}"


def build_inbox_store(db: Path) -> None:
    database = Database.open(db)
    try:
        for plan in PLANNED:
            mapped = _session(plan)
            mapped.validate()
            upsert_session(database, mapped, now=NOW, captured_on="tests")
            if plan.verdict:
                record_verdict(database, plan.id, plan.verdict, "checked", now=NOW)
        for number in range(FILLERS):
            filler = Planned(filler_id(number), "cline", number % 24, [PLAIN])
            upsert_session(database, _session(filler, day=f"2026-08-{1 + number // 24:02d}"), now=NOW, captured_on="t")
    finally:
        database.close()
