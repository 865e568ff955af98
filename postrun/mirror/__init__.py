"""The team mirror: the store's outbox drained into one PostgreSQL database (psycopg 3).

psycopg comes with the ``postgres`` extra (and the OS packages); without it everything else
works, and a configured mirror says once what to install.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from postrun.errors import ConfigError, PostrunError
from postrun.mirror.target import MirrorTarget

if TYPE_CHECKING:
    from postrun.mirror.worker import MirrorWorker

DRIVER_MISSING = "the team mirror needs the postgres extra: pip install 'postrun[postgres]'"


class DriverMissing(ConfigError):
    """psycopg cannot be imported: an installation without the ``postgres`` extra (exit 78)."""


def require_driver() -> None:
    """Raise DriverMissing when psycopg cannot be imported."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise DriverMissing("", DRIVER_MISSING) from None


def usable_target(target: MirrorTarget) -> MirrorTarget:
    """``target`` once the driver is there and libpq accepts its options; ConfigError otherwise."""
    require_driver()
    from postrun.mirror.push import conninfo

    conninfo(target)
    return target


def start_mirror(
    target: MirrorTarget, db: Path, lock: Path, logger: logging.Logger, *, redact: bool = True
) -> MirrorWorker | None:
    """The capture's mirror thread, started; None (said once in the log) without psycopg or
    with a ``mirror_url`` libpq refuses."""
    try:
        usable_target(target)
    except PostrunError as exc:
        logger.error(f"mirror {target.label}: {exc}; capture records without the mirror")
        return None
    from postrun.mirror.worker import MirrorWorker

    worker = MirrorWorker(target, db, lock, logger, redact=redact)
    worker.start()
    return worker
