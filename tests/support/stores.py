"""Stores as an earlier Postrun left them, made from a current one."""

from __future__ import annotations

from pathlib import Path

import apsw

from postrun.store.migrations import MIGRATIONS


def downgrade_store(path: Path, version: int) -> None:
    """Drop every table, index and column the migrations after ``version`` added, and say ``version``.

    The rows of the tables that version had stay, so a test can check they survive the
    migration back up (whatever migrations other changes append later).
    """
    scratch = apsw.Connection(":memory:")
    for migration in MIGRATIONS[:version]:
        scratch.execute(migration)
    kept = {name for (name,) in scratch.execute("SELECT name FROM sqlite_schema")}
    columns = {
        table: {row[1] for row in scratch.execute(f'pragma table_info("{table}")')}
        for (table,) in scratch.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    }
    scratch.close()
    connection = apsw.Connection(str(path))
    objects = connection.execute("SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'").fetchall()
    for kind in ("table", "index"):
        for found_kind, name in objects:
            if found_kind == kind and name not in kept:
                connection.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
    for table, known in columns.items():
        for row in connection.execute(f'pragma table_info("{table}")').fetchall():
            if row[1] not in known:
                connection.execute(f'ALTER TABLE "{table}" DROP COLUMN "{row[1]}"')
    connection.execute(f"pragma user_version={version}")
    connection.close()
