"""The SQLite floor: what SQLite alone costs to keep the rows a cold ingest stores.

Beside the parse floor, this is the other half of the budget the cold-ingest target leaves
for Postrun's own Python: the stored steps of one cold-ingest slice (read back through the
library, untimed) are written into a fresh file with none of Postrun's mapping — each step's
record as it is exported (bytes) into a plain table, and its searchable text into a
contentless FTS5 table with the store's tokenizer — in one transaction, WAL with
``synchronous=normal`` as the store runs, then checkpointed. Timed in a fresh Python process
like the parse floor; the text is the store's own ``search_body`` of each step.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from bench.stats import median

_TIMER = """
import sys, time, orjson, apsw
from pathlib import Path
from postrun.store.db import Database
from postrun.store.codec import search_body
from postrun.store.query import load_envelope
store, scratch, repeats = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
ids = sys.stdin.read().split()
rows = []
with Database.open(store, create=False) as database:
    for session_id in ids:
        for step in load_envelope(database, session_id)["steps"]:
            rows.append((orjson.dumps(step), search_body(step)))
def once(index):
    path = scratch / f"sqlite-floor-{index}.db"
    connection = apsw.Connection(str(path))
    connection.execute("pragma journal_mode=wal")
    connection.execute("pragma synchronous=normal")
    connection.execute("CREATE TABLE steps (id INTEGER PRIMARY KEY, record BLOB NOT NULL)")
    connection.execute(
        "CREATE VIRTUAL TABLE search USING fts5 (body, content='', contentless_delete=1,"
        " tokenize='unicode61 remove_diacritics 2')"
    )
    started = time.perf_counter()
    with connection:
        connection.executemany("INSERT INTO steps VALUES (?, ?)", enumerate(r for r, _ in rows))
        connection.executemany("INSERT INTO search (rowid, body) VALUES (?, ?)", enumerate(t for _, t in rows))
    connection.execute("pragma wal_checkpoint(TRUNCATE)")
    elapsed = time.perf_counter() - started
    connection.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return elapsed
once(0)
print(orjson.dumps({"steps": len(rows), "seconds": [once(i + 1) for i in range(repeats)]}).decode())
"""


def sqlite_floor(store: Path, session_ids: Sequence[str], *, scratch: Path, repeats: int = 3) -> float:
    """The median time SQLite takes to write the stored steps of ``session_ids`` (see above)."""
    scratch.mkdir(parents=True, exist_ok=True)
    finished = subprocess.run(
        [sys.executable, "-c", _TIMER, str(store), str(scratch), str(repeats)],
        input="\n".join(session_ids).encode(),
        capture_output=True,
        check=True,
    )
    return median(orjson.loads(finished.stdout)["seconds"])
