"""What the store keeps per actor besides its record: a helper's own usage and its steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import apsw
import orjson

from postrun.records import StepRow, StoredActor
from postrun.store import codec
from postrun.store.db import Database


def write_actor_metrics(
    connection: apsw.Connection, session_id: str, metrics: Mapping[str, dict[str, Any] | None]
) -> None:
    """Set each named actor's usage (in the transaction that wrote the actors)."""
    for actor_id, value in metrics.items():
        encoded = None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        connection.execute(
            "UPDATE actors SET metrics = ? WHERE session_id = ? AND id = ? AND metrics IS NOT ?",
            (encoded, session_id, actor_id, encoded),
        )


def stored_actor(database: Database, session_id: str, actor_id: str) -> StoredActor | None:
    """An actor of a stored session with its steps in ``seq`` order, or None.

    A helper's step ids are ``<actor id>/<step id>``: one range of the (session, id) index.
    """
    found = database.execute(
        "SELECT record, metrics FROM actors WHERE session_id = ? AND id = ?", (session_id, actor_id)
    ).fetchone()
    if found is None:
        return None
    prefix = f"{actor_id}/"
    steps = tuple(
        StepRow.stored(codec.unpack(record))
        for (record,) in database.execute(
            "SELECT record FROM steps WHERE session_id = ? AND id >= ? AND id < ? ORDER BY seq",
            (session_id, prefix, f"{actor_id}0"),  # "0" follows "/"
        )
    )
    metrics = orjson.loads(found[1]) if found[1] is not None else None
    return StoredActor(orjson.loads(found[0]), steps, metrics)
