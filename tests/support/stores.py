"""Stores as an earlier Postrun left them, made from a current one."""

from __future__ import annotations

from pathlib import Path

import apsw

from postrun.store.migrations import MIGRATIONS


def downgrade_store(path: Path, version: int) -> None:
    """Drop every table and index the migrations after ``version`` added, and say ``version``.

    The rows of the tables that version had stay, so a test can check they survive the
    migration back up (whatever migrations other changes append later).
    """
    scratch = apsw.Connection(":memory:")
    for migration in MIGRATIONS[:version]:
        scratch.execute(migration)
    kept = {name for (name,) in scratch.execute("SELECT name FROM sqlite_schema")}
    scratch.close()
    connection = apsw.Connection(str(path))
    objects = connection.execute("SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'").fetchall()
    for kind in ("table", "index"):
        for found_kind, name in objects:
            if found_kind == kind and name not in kept:
                connection.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
    connection.execute(f"pragma user_version={version}")
    connection.close()
