"""Stores as an earlier Postrun left them, made from a current one."""

from __future__ import annotations

from pathlib import Path

import apsw

from postrun.store import codec
from postrun.store.migrations import MIGRATIONS

_STEP_COLUMNS = "rowid, session_id, id, seq, turn_id, type, outcome, content_status, at, record, digest"


def downgrade_store(path: Path, version: int) -> None:
    """Drop every table, index and column the migrations after ``version`` added, and say ``version``.

    The rows of the tables that version had stay, so a test can check they survive the
    migration back up (whatever migrations other changes append later).
    """
    scratch = apsw.Connection(":memory:")
    for migration in MIGRATIONS[:version]:
        scratch.execute(migration)
    kept = {name for (name,) in scratch.execute("SELECT name FROM sqlite_schema")}
    # The steps table and its search index as that version made them (before records were compressed).
    step_schema = [
        str(sql)
        for (sql,) in scratch.execute(
            "SELECT sql FROM sqlite_schema WHERE tbl_name IN ('steps', 'step_search') AND sql IS NOT NULL"
            " ORDER BY type = 'index'"
        )
    ]
    columns = {
        table: {row[1] for row in scratch.execute(f'pragma table_info("{table}")')}
        for (table,) in scratch.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    }
    scratch.close()
    connection = apsw.Connection(str(path))
    if "step_search_text" not in kept:
        _uncompress_steps(connection, step_schema)
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


def _uncompress_steps(connection: apsw.Connection, step_schema: list[str]) -> None:
    """Records as JSON text and a search index with its own copy of the text, rows kept."""
    codec.register(connection)
    with connection:
        texts = connection.execute("SELECT step_rowid, body FROM step_search_text").fetchall()
        steps = connection.execute(
            "SELECT rowid, session_id, id, seq, turn_id, type, outcome, content_status, at, postrun_record(record),"
            " digest FROM steps"
        ).fetchall()
        connection.execute("DROP TABLE step_search; DROP VIEW step_search_text; DROP TABLE steps")
        for sql in step_schema:
            connection.execute(sql)
        connection.executemany(f"INSERT INTO steps ({_STEP_COLUMNS}) VALUES ({', '.join('?' * 11)})", steps)
        connection.executemany("INSERT INTO step_search (rowid, body) VALUES (?, ?)", texts)
