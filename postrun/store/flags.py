"""The store's side of flags: the step_flags index and the version of the rules.

A step's flags live in its record (so its digest and history cover them); ``step_flags``
repeats their kinds for counting and filtering without reading records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import apsw

from postrun.store.db import Database

_RULES_KEY = "flag_rules_version"
SEVERITY_ORDER = {"info": 0, "warn": 1, "danger": 2}


def write_step_flags(
    connection: apsw.Connection, session_id: str, step_id: str, flags: Sequence[Mapping[str, str]], *, replace: bool
) -> None:
    """Index one step's flags (``replace``: the step was stored before, drop its old ones)."""
    if replace:
        remove_step_flags(connection, session_id, step_id)
    insert_step_flags(connection, step_flag_rows(session_id, step_id, flags))


def step_flag_rows(
    session_id: str, step_id: str, flags: Sequence[Mapping[str, str]]
) -> list[tuple[str, str, str, str]]:
    """The ``step_flags`` rows of one step: the strongest severity of each kind it has."""
    strongest: dict[str, str] = {}
    for flag in flags:
        kind, severity = flag["kind"], flag["severity"]
        if SEVERITY_ORDER[severity] >= SEVERITY_ORDER[strongest.get(kind, "info")]:
            strongest[kind] = severity
    return [(session_id, step_id, kind, severity) for kind, severity in strongest.items()]


def insert_step_flags(connection: apsw.Connection, rows: Sequence[tuple[str, str, str, str]]) -> None:
    """Index steps' flags (``step_flag_rows``) of steps that have none indexed yet."""
    if rows:
        connection.executemany("INSERT INTO step_flags (session_id, step_id, kind, severity) VALUES (?, ?, ?, ?)", rows)


def remove_step_flags(connection: apsw.Connection, session_id: str, step_id: str) -> None:
    connection.execute("DELETE FROM step_flags WHERE session_id = ? AND step_id = ?", (session_id, step_id))


def stored_rules_version(database: Database) -> str | None:
    value = database.execute("SELECT value FROM store_meta WHERE key = ?", (_RULES_KEY,)).fetchone()
    return None if value is None else str(value[0])


def set_rules_version(database: Database, version: str) -> None:
    with database.transaction() as connection:
        connection.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT DO UPDATE SET value = excluded.value",
            (_RULES_KEY, version),
        )


def strongest(severities: Iterable[str]) -> str:
    """The strongest of ``severities`` (info when there is none)."""
    return max(severities, key=lambda severity: SEVERITY_ORDER.get(severity, 0), default="info")
