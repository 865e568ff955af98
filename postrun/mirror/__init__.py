"""The team mirror: the store's outbox drained into one PostgreSQL database (psycopg 3).

psycopg comes with the ``postgres`` extra (and the OS packages); without it everything else
works, and a configured mirror says once what to install.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from postrun.errors import PostrunError
from postrun.mirror.target import mirror_target

if TYPE_CHECKING:
    from postrun.mirror.worker import MirrorWorker

DRIVER_MISSING = "psycopg is not installed (install postrun[postgres], e.g. `pipx install 'postrun[postgres]'`)"


def require_driver(where: str) -> None:
    """Raise PostrunError naming ``where`` when psycopg cannot be imported."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PostrunError(where, DRIVER_MISSING) from None


def start_mirror(url: str, db: Path, lock: Path, logger: logging.Logger) -> MirrorWorker | None:
    """The capture's mirror thread, started; None (said once in the log) without psycopg."""
    target = mirror_target(url)
    try:
        require_driver(f"mirror {target.label}")
    except PostrunError as exc:
        logger.error(f"{exc}; capture records without the mirror")
        return None
    from postrun.mirror.worker import MirrorWorker

    worker = MirrorWorker(target, db, lock, logger)
    worker.start()
    return worker
