"""6. Store size: the store's files (db, wal, shm) per stored step and per MB of source.

The split by table comes from SQLite's ``dbstat`` virtual table, read through a read-only
connection. The vault's raw copies (its ``raw_*`` tables and their indexes) are counted
apart, so records and index have their own figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import apsw

RAW_COPY_TABLES = ("raw_", "sqlite_autoindex_raw_")


@dataclass(frozen=True, slots=True)
class StoreSize:
    store_bytes: int
    steps: int
    sessions: int
    source_bytes: int
    by_table: tuple[tuple[str, int], ...]  # (table or index, bytes), largest first

    @property
    def raw_copies_bytes(self) -> int:
        return sum(size for name, size in self.by_table if name.startswith(RAW_COPY_TABLES))

    @property
    def records_bytes(self) -> int:
        """The store's files without the vault's pages: records, history and search index."""
        return self.store_bytes - self.raw_copies_bytes

    @property
    def bytes_per_step(self) -> float:
        return self.store_bytes / self.steps

    @property
    def bytes_per_source_mb(self) -> float:
        return self.store_bytes / (self.source_bytes / 2**20)

    @property
    def records_bytes_per_source_mb(self) -> float:
        return self.records_bytes / (self.source_bytes / 2**20)


def store_files_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def measure_store(db: Path, *, source_bytes: int) -> StoreSize:
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        steps = int(connection.execute("SELECT count(*) FROM steps").get)
        sessions = int(connection.execute("SELECT count(*) FROM sessions").get)
        try:
            rows = connection.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        except apsw.SQLError:  # SQLite built without dbstat
            rows = []
    finally:
        connection.close()
    return StoreSize(
        store_bytes=store_files_bytes(db),
        steps=steps,
        sessions=sessions,
        source_bytes=source_bytes,
        by_table=tuple((str(name), int(str(size))) for name, size in rows),
    )
