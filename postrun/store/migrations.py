"""The store's schema, as an ordered list of migrations (``pragma user_version`` = how many ran).

Never edit a migration that has shipped: add a new one.
"""

from __future__ import annotations

_V1 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    record TEXT NOT NULL,            -- the v1.2 session record (canonical JSON)
    digest TEXT NOT NULL,
    started_at TEXT NOT NULL,        -- UTC, for ordering
    ended_at TEXT,
    model TEXT,
    provider TEXT,
    cline_title TEXT,
    cline_status TEXT,
    git_branch TEXT,
    approvals TEXT NOT NULL,         -- the approval settings snapshot that decided `decision`
    source_files TEXT NOT NULL,      -- [{path, size, mtime_ns, ino}] of the files last read
    captured_on TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX sessions_by_start ON sessions (started_at DESC, id);

CREATE TABLE segments (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    idx INTEGER NOT NULL,
    record TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
) STRICT, WITHOUT ROWID;

CREATE TABLE actors (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    id TEXT NOT NULL,
    record TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
) STRICT, WITHOUT ROWID;

CREATE TABLE turns (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    record TEXT NOT NULL,            -- without step_ids: they are rebuilt from the steps
    digest TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
) STRICT, WITHOUT ROWID;

CREATE TABLE steps (
    rowid INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    type TEXT NOT NULL,
    outcome TEXT NOT NULL,
    content_status TEXT NOT NULL,
    at TEXT NOT NULL,                -- UTC, for --since
    record TEXT NOT NULL,
    digest TEXT NOT NULL,
    UNIQUE (session_id, id)
) STRICT;
CREATE INDEX steps_by_seq ON steps (session_id, seq);

-- Earlier versions of records that changed or disappeared from the source.
CREATE TABLE history (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    kind TEXT NOT NULL,              -- step | turn | segment | actor
    record_id TEXT NOT NULL,
    record TEXT NOT NULL,
    digest TEXT NOT NULL,
    reason TEXT NOT NULL,            -- changed | removed
    replaced_at TEXT NOT NULL
) STRICT;
CREATE INDEX history_by_session ON history (session_id, id);

-- Full-text index over a bounded prefix of each step's content; rowid = steps.rowid.
CREATE VIRTUAL TABLE step_search USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2');
"""

# Every ingest compares the session's stored step digests with the mapped ones. Read
# from the table, each digest sits behind its (large, often overflowing) record; this
# index answers that query alone.
_V2 = """
CREATE INDEX steps_digests ON steps (session_id, id, digest);
"""

# The vault: raw copies of the agent's own files (see store/vault.py). No foreign key to
# sessions: the copies are what a session's records are rebuilt from, so they stand alone.
_VAULT = """
CREATE TABLE raw_blobs (
    hash TEXT PRIMARY KEY,           -- SHA-256 of the raw bytes (hex)
    size INTEGER NOT NULL,           -- raw length in bytes
    data BLOB NOT NULL               -- one zstd frame
) STRICT;

CREATE TABLE raw_files (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    name TEXT NOT NULL,              -- relative to the agent's data folder: sessions/<id>/<id>.messages.json
    path TEXT NOT NULL,              -- where it was read
    hash TEXT NOT NULL REFERENCES raw_blobs (hash),
    size INTEGER NOT NULL,           -- the fingerprint seen when it was read
    mtime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    settings INTEGER NOT NULL,       -- 1: the approval settings file the session's decisions came from
    since INTEGER NOT NULL,          -- the session's vault generation that first kept this version
    until INTEGER,                   -- the generation that replaced or removed it; NULL: the newest
    read_at TEXT NOT NULL,           -- when these bytes were read
    replaced_at TEXT                 -- when a version that does not only extend it replaced it
) STRICT;
CREATE INDEX raw_files_by_session ON raw_files (session_id, until);
CREATE INDEX raw_files_by_hash ON raw_files (hash);
"""

# Review verdicts, one row per change (the newest is the session's verdict); the two partial
# indexes the review app's "failed only" and "flagged only" filters read instead of every step
# record; and sessions by last change, which the review app reads to refresh what it keeps.
# IF NOT EXISTS: running it again over a store that has it already changes nothing.
_REVIEW = """
CREATE TABLE IF NOT EXISTS verdicts (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    state TEXT NOT NULL,             -- looks_good | needs_follow_up
    note TEXT NOT NULL,
    at TEXT NOT NULL                 -- UTC
) STRICT;
CREATE INDEX IF NOT EXISTS verdicts_by_session ON verdicts (session_id, id);
CREATE INDEX IF NOT EXISTS steps_failed ON steps (session_id) WHERE outcome = 'failed';
CREATE INDEX IF NOT EXISTS steps_flagged ON steps (session_id) WHERE json_array_length(record, '$.flags') > 0;
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at, id);
"""

# A helper actor's own usage (v1.2 ``metrics``): the session's metrics sum every actor's,
# and a helper whose transcript cannot be read this time keeps what it had.
_HELPER_METRICS = """
ALTER TABLE actors ADD COLUMN metrics TEXT;
"""

# A dictionary of earlier raw content (see store/vault.py): files compressed alone cannot
# use what other sessions hold, and Cline's sessions repeat much of each other. IF NOT
# EXISTS: a store rolled back to an earlier version by dropping the vault keeps this table.
_VAULT_DICTIONARY = """
CREATE TABLE IF NOT EXISTS raw_dictionaries (
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL,              -- SHA-256 of the dictionary's content
    data BLOB NOT NULL,              -- the content, as one zstd frame
    sessions TEXT NOT NULL           -- JSON list of the sessions whose files it was cut from
) STRICT;
ALTER TABLE raw_blobs ADD COLUMN dictionary INTEGER REFERENCES raw_dictionaries (id);
"""

# The team mirror's outbox: one row per session that PostgreSQL must receive, written in the
# transaction that changed the session; `version` grows with every change, so a push marks done
# only the change it sent. The machine id tells this store's rows apart from other machines'
# in a shared database. A store that already holds sessions queues them all. IF NOT EXISTS and
# DO NOTHING: running it again over a store that has it already changes nothing.
_MIRROR = """
CREATE TABLE IF NOT EXISTS mirror_outbox (
    session_id TEXT PRIMARY KEY,
    op TEXT NOT NULL,                -- upsert | delete
    version INTEGER NOT NULL,
    queued_at TEXT NOT NULL          -- when it started waiting (UTC)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mirror_state (
    key TEXT PRIMARY KEY,            -- machine_id | database_id | last_push
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO mirror_state (key, value) VALUES ('machine_id', lower(hex(randomblob(16)))) ON CONFLICT DO NOTHING;
INSERT INTO mirror_outbox (session_id, op, version, queued_at)
    SELECT id, 'upsert', 1, updated_at FROM sessions WHERE true ON CONFLICT DO NOTHING;
"""

# Flags: the flags of current steps (each step's record holds them too) for counts and
# filters; store-wide facts (the flag rules' version); sessions forgotten on purpose.
_FLAGS = """
CREATE TABLE step_flags (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    step_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    severity TEXT NOT NULL,          -- the highest of the step's flags of this kind
    PRIMARY KEY (session_id, step_id, kind)
) STRICT, WITHOUT ROWID;
CREATE INDEX step_flags_by_kind ON step_flags (kind, session_id, step_id);
CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE tombstones (
    session_id TEXT PRIMARY KEY,     -- only the id and when: nothing of the content
    forgotten_at TEXT NOT NULL
) STRICT;
"""

# Step records kept zstd-compressed (``postrun.store.codec``), and a search index without
# its own copy of the text: an external-content FTS5 table whose text comes from the
# steps through a view. The steps table is rebuilt (a column's type cannot change in
# place), with its indexes but the flagged-steps one: step_flags answers that, and an index
# over compressed records would decompress every step written. History keeps its JSON text;
# the search index is rebuilt from the steps.
_COMPACT_STEPS = """
CREATE TABLE steps_packed (
    rowid INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    type TEXT NOT NULL,
    outcome TEXT NOT NULL,
    content_status TEXT NOT NULL,
    at TEXT NOT NULL,
    record BLOB NOT NULL,            -- canonical JSON, zstd (postrun_record(record) is the text)
    digest TEXT NOT NULL,
    UNIQUE (session_id, id)
) STRICT;
INSERT INTO steps_packed
    SELECT rowid, session_id, id, seq, turn_id, type, outcome, content_status, at, postrun_pack(record), digest
      FROM steps ORDER BY rowid;
DROP TABLE step_search;
DROP TABLE steps;
ALTER TABLE steps_packed RENAME TO steps;
CREATE INDEX steps_by_seq ON steps (session_id, seq);
CREATE INDEX steps_digests ON steps (session_id, id, digest);
CREATE INDEX steps_failed ON steps (session_id) WHERE outcome = 'failed';
CREATE VIEW step_search_text (step_rowid, body) AS SELECT rowid, postrun_search_text(record) FROM steps;
CREATE VIRTUAL TABLE step_search USING fts5 (
    body, content = 'step_search_text', content_rowid = 'step_rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO step_search (step_search) VALUES ('rebuild');
"""

# The review app: the files page lists a workspace's edits newest first, a page at a time
# (without an index it sorted every edit of the store for each page); the review inbox finds
# the sessions with a failed command (without one it read each failed step's row for its type)
# and lists one agent's sessions (without one it read every session's row).
_REVIEW_INDEXES = """
CREATE INDEX IF NOT EXISTS steps_edits_by_time ON steps (at, seq) WHERE type = 'edit';
CREATE INDEX IF NOT EXISTS steps_failed_commands ON steps (session_id) WHERE outcome = 'failed' AND type = 'command';
CREATE INDEX IF NOT EXISTS sessions_by_agent ON sessions (agent, started_at DESC, id);
"""

# Why a session was tombstoned: ``forgotten`` (postrun forget) or ``excluded`` (stored before its
# workspace was known, removed when it turned out excluded).
_TOMBSTONE_KINDS = """
ALTER TABLE tombstones ADD COLUMN kind TEXT NOT NULL DEFAULT 'forgotten';
"""

MIGRATIONS: tuple[str, ...] = (
    _V1,
    _V2,
    _VAULT,
    _REVIEW,
    _HELPER_METRICS,
    _VAULT_DICTIONARY,
    _MIRROR,
    _FLAGS,
    _COMPACT_STEPS,
    _REVIEW_INDEXES,
    _TOMBSTONE_KINDS,
)
