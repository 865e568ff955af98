"""Every exchange with the mirror is bounded: a lock another PostgreSQL session holds, or a
statement that does not end, fails in a bounded time (then retried) instead of holding
`postrun mirror push`, `mirror status` or capture's mirror thread forever.

PostgreSQL's own ``lock_timeout`` and ``statement_timeout`` do it, set for the transaction
alone (``set_config(..., true)``): no session state, so a pooler in transaction mode, which
hands the connection to another client between transactions, works as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg

LOCK_TIMEOUT_SECONDS = 10
STATEMENT_TIMEOUT_SECONDS = 60

_LIMITS = (
    "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)",
    (f"{LOCK_TIMEOUT_SECONDS}s", f"{STATEMENT_TIMEOUT_SECONDS}s"),
)


def limit(connection: psycopg.Connection[Any]) -> None:
    """Bound the statements of the transaction in progress."""
    connection.execute(*_LIMITS)


@contextlib.contextmanager
def bounded(connection: psycopg.Connection[Any]) -> Iterator[None]:
    """A transaction whose statements are bounded (the connection is in autocommit mode)."""
    with connection.transaction():
        limit(connection)
        yield
