"""Every value a store holds, records decompressed: where a test looks for a text that must not
be stored. The vault keeps the agent's own files, which hold what it read: the one place a
read's text may be, so its tables are left out unless asked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from postrun.store import codec

VAULT_TABLES = ("raw_blobs", "raw_files", "raw_dictionaries")


def stored_texts(database: Any, *, vault: bool = False) -> Iterator[bytes]:
    """Every value of every table of ``database`` (a ``Database``), the vault's but when ``vault``."""
    tables = [str(name) for (name,) in database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        if table in VAULT_TABLES and not vault:
            continue
        for row in database.execute(f'SELECT * FROM "{table}"'):
            for value in row:
                if isinstance(value, bytes):
                    yield codec.unpack(value)
                elif isinstance(value, str):
                    yield value.encode()
