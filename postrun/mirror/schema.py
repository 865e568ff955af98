"""The mirror's schema in PostgreSQL: schema ``postrun``, created and migrated by Postrun.

Every table holds the current version of its records, one row per machine, session and record
id; earlier versions live in ``history``. Records are redacted unless a machine opted out
(``sessions.redaction`` says how each session was pushed). Every row names the machine it came from (the store's
random machine id, its host name and OS user), so any number of machines share one database.
``schema_version`` has one row: the version and the database's own random id (a store that
meets a database id it has not pushed to sends its whole content). Never edit a migration
that has shipped: add a new one.
"""

from __future__ import annotations

import psycopg

from postrun.errors import PostrunError
from postrun.exitcodes import ExitCode
from postrun.mirror.bounded import bounded

_MACHINE = "machine_id text NOT NULL, host text NOT NULL, os_user text NOT NULL, session_id text NOT NULL"
_PARENT = "FOREIGN KEY (machine_id, session_id) REFERENCES postrun.sessions ON DELETE CASCADE"

_V1 = f"""
CREATE TABLE postrun.sessions (
    {_MACHINE},
    agent text NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at timestamptz,
    workspace text,
    model text,
    provider text,
    agent_title text,
    agent_status text,
    git_branch text,
    cost_usd double precision,          -- metrics.cost_usd, as the agent reported it
    record jsonb NOT NULL,              -- the v1.2 session record
    digest text NOT NULL,
    captured_on text NOT NULL,
    ingested_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,    -- when the store last changed it
    mirrored_at timestamptz NOT NULL,   -- when this row was last written here
    PRIMARY KEY (machine_id, session_id)
);
CREATE INDEX sessions_by_start ON postrun.sessions (started_at DESC);

CREATE TABLE postrun.segments (
    {_MACHINE}, idx integer NOT NULL, record jsonb NOT NULL, digest text NOT NULL,
    PRIMARY KEY (machine_id, session_id, idx), {_PARENT}
);
CREATE TABLE postrun.actors (
    {_MACHINE}, actor_id text NOT NULL, record jsonb NOT NULL, digest text NOT NULL,
    PRIMARY KEY (machine_id, session_id, actor_id), {_PARENT}
);
CREATE TABLE postrun.turns (
    {_MACHINE}, turn_id text NOT NULL, idx integer NOT NULL, record jsonb NOT NULL, digest text NOT NULL,
    PRIMARY KEY (machine_id, session_id, turn_id), {_PARENT}
);
CREATE TABLE postrun.steps (
    {_MACHINE},
    step_id text NOT NULL,
    seq integer NOT NULL,
    turn_id text NOT NULL,
    at timestamptz NOT NULL,
    type text NOT NULL,
    outcome text NOT NULL,
    decision text NOT NULL,
    command text,
    exit_code bigint,
    path text,
    flags jsonb NOT NULL,
    payload jsonb NOT NULL,
    record jsonb NOT NULL,              -- the v1.2 step without its payload
    digest text NOT NULL,
    PRIMARY KEY (machine_id, session_id, step_id), {_PARENT}
);
CREATE INDEX steps_by_time ON postrun.steps (at);
CREATE INDEX steps_by_path ON postrun.steps (path) WHERE path IS NOT NULL;

CREATE TABLE postrun.history (
    {_MACHINE},
    history_id bigint NOT NULL,         -- the store's own id of the entry
    kind text NOT NULL,                 -- step | turn | segment | actor (and what later Postruns add)
    record_id text NOT NULL,
    record jsonb NOT NULL,              -- the earlier version, whole
    digest text NOT NULL,
    reason text NOT NULL,               -- changed | removed
    replaced_at timestamptz NOT NULL,
    PRIMARY KEY (machine_id, session_id, history_id), {_PARENT}
);
"""

# Version 2: the mirror holds redacted records. ``redaction`` names the redactor's rules a
# session was pushed under (``none``: in clear, as every session pushed before was); each store
# re-sends its sessions whose redaction is not the one it pushes with now.
_V2 = """
ALTER TABLE postrun.sessions ADD COLUMN redaction text NOT NULL DEFAULT 'none';
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2)
SCHEMA_VERSION = len(MIGRATIONS)
REDACTED_SINCE = 2  # the first version with sessions.redaction
# One migration at a time, whichever machine gets there first.
_LOCK_KEY = 0x706F737472756E  # "postrun"


class MirrorSchemaTooNew(PostrunError):
    exit_code = ExitCode.CONFIG


def ensure_schema(connection: psycopg.Connection[tuple[object, ...]], where: str) -> str:
    """Create or migrate schema ``postrun``; returns the database's id.

    Raises MirrorSchemaTooNew (exit 78, naming ``where``) when a newer Postrun migrated it.
    """
    with bounded(connection):
        version, database_id = _version(connection, where)
        if version == SCHEMA_VERSION:
            return database_id
    with bounded(connection):
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        connection.execute("CREATE SCHEMA IF NOT EXISTS postrun")
        connection.execute(
            "CREATE TABLE IF NOT EXISTS postrun.schema_version ("
            " version integer NOT NULL, database_id text NOT NULL, migrated_at timestamptz NOT NULL)"
        )
        version, database_id = _version(connection, where)  # again, under the lock
        if version == 0:
            connection.execute(
                "INSERT INTO postrun.schema_version VALUES (0, md5(random()::text || clock_timestamp()::text), now())"
            )
            version, database_id = _version(connection, where)
        for number in range(version, SCHEMA_VERSION):
            connection.execute(MIGRATIONS[number].encode())
        connection.execute("UPDATE postrun.schema_version SET version = %s, migrated_at = now()", (SCHEMA_VERSION,))
    return database_id


def _version(connection: psycopg.Connection[tuple[object, ...]], where: str) -> tuple[int, str]:
    exists = connection.execute("SELECT to_regclass('postrun.schema_version') IS NOT NULL").fetchone()
    if exists is None or not exists[0]:
        return 0, ""
    row = connection.execute("SELECT version, database_id FROM postrun.schema_version").fetchone()
    if row is None:
        return 0, ""
    version, database_id = int(str(row[0])), str(row[1])
    if version > SCHEMA_VERSION:
        raise MirrorSchemaTooNew(
            where,
            f"schema postrun is at version {version}, newer than this Postrun knows ({SCHEMA_VERSION});"
            " upgrade Postrun on this machine",
        )
    return version, database_id
