"""The SQLite floor: what SQLite alone costs to keep the rows a cold ingest stores.

Beside the parse floor, this is the other half of the budget the cold-ingest target leaves
for Postrun's own Python. The rows the store keeps of one cold-ingest slice — its sessions,
segments, actors, turns, steps (records as stored, compressed), flags, and the vault's files,
copies and dictionaries — are read from the store (untimed) and written into a fresh store
of the same schema (created by ``Database.open``, untimed: its tables and the indexes its
readers need), with the steps' search text into its search index, one ``executemany`` per
table in one transaction, as the store runs (WAL, ``synchronous=normal``), then
checkpointed. None of Postrun's mapping or bookkeeping runs: no reads of what is stored, no
digests compared, one statement a table. Left out: the mirror's outbox (a store without a
mirror could go without it). Timed in a fresh Python process like the parse floor.

The floor is the CPU time of that (``time.process_time``), as the work floor's other parts:
issue 27 defines the work floor as "the measured CPU of the unskippable work ÷ cores". Its wall
time also holds the wait for the disk (the checkpoint's and the WAL's syncs), which is no core's
work and which an ingest overlaps with its other work: about a fifth of the wall time here
(scratch, a 25 MB slice: 0.100 s of wall, 0.081 s of CPU). The wall time is kept beside it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from bench.stats import median

TIMER = """
import sys, time, orjson, apsw
from pathlib import Path
from postrun.store.db import Database
from postrun.store.codec import search_body, unpack
store, scratch, repeats = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
ids = sys.stdin.read().split()
marks = ",".join("?" * len(ids))
hashes = f"SELECT hash FROM raw_files WHERE session_id IN ({marks})"
chosen = {
    "sessions": (f"id IN ({marks})", ids),
    "segments": (f"session_id IN ({marks})", ids),
    "actors": (f"session_id IN ({marks})", ids),
    "turns": (f"session_id IN ({marks})", ids),
    "steps": (f"session_id IN ({marks})", ids),
    "step_flags": (f"session_id IN ({marks})", ids),
    "raw_dictionaries": (f"id IN (SELECT dictionary FROM raw_blobs WHERE hash IN ({hashes}))", ids),
    "raw_blobs": (f"hash IN ({hashes})", ids),
    "raw_files": (f"session_id IN ({marks})", ids),
}
source = apsw.Connection(str(store), flags=apsw.SQLITE_OPEN_READONLY)
tables = []
for table, (where, bindings) in chosen.items():
    columns = [name for (name,) in source.execute("SELECT name FROM pragma_table_info(?)", (table,))]
    found = source.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", bindings).fetchall()
    tables.append((table, columns, found))
steps = next(found for table, _, found in tables if table == "steps")
record_at = next(columns for table, columns, _ in tables if table == "steps").index("record")
bodies = [(row[0], search_body(orjson.loads(unpack(row[record_at])))) for row in steps]
source.close()
def once(index):
    path = scratch / f"sqlite-floor-{index}.db"
    with Database.open(path) as database:
        connection = database.connection
        started, cpu = time.perf_counter(), time.process_time()
        with connection:
            for table, columns, found in tables:
                if found:
                    named = ", ".join(columns)
                    places = ", ".join("?" * len(columns))
                    connection.executemany(f"INSERT INTO {table} ({named}) VALUES ({places})", found)
            connection.executemany("INSERT INTO step_search (rowid, body) VALUES (?, ?)", bodies)
        connection.execute("pragma wal_checkpoint(TRUNCATE)")
        elapsed = (time.process_time() - cpu, time.perf_counter() - started)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return elapsed
once(0)
print(orjson.dumps({"steps": len(steps), "passes": [once(i + 1) for i in range(repeats)]}).decode())
"""


@dataclass(frozen=True, slots=True)
class SqliteFloor:
    """The median CPU time of SQLite's passes, and their median wall time."""

    cpu_seconds: float
    wall_seconds: float


def timer_command(store: Path, scratch: Path, repeats: int) -> list[str]:
    """The SQLite floor's timer: one untimed pass, then ``repeats``; the session ids on standard input."""
    scratch.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-c", TIMER, str(store), str(scratch), str(repeats)]


def sqlite_floor(store: Path, session_ids: Sequence[str], *, scratch: Path, repeats: int = 3) -> SqliteFloor:
    """What SQLite takes to write the stored rows of ``session_ids`` (see above), median of ``repeats``."""
    finished = subprocess.run(
        timer_command(store, scratch, repeats),
        input="\n".join(session_ids).encode(),
        capture_output=True,
        check=True,
    )
    passes = orjson.loads(finished.stdout)["passes"]
    return SqliteFloor(median([cpu for cpu, _ in passes]), median([wall for _, wall in passes]))
