"""What the store keeps per actor besides its record: a helper's own usage and its steps."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import apsw
import orjson

from postrun.errors import StoreError
from postrun.records import StepRow, StoredActor
from postrun.store import codec
from postrun.store.db import Database, describe_sqlite_error


def write_actor_metrics(
    connection: apsw.Connection, session_id: str, metrics: Mapping[str, dict[str, Any] | None], *, fresh: bool
) -> None:
    """Set each named actor's usage (in the transaction that wrote the actors; ``fresh``: they
    were just inserted, with none)."""
    for actor_id, value in metrics.items():
        if fresh and value is None:
            continue
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


class StoredHelpers(Mapping[str, StoredActor]):
    """The store's helper actors of one session, read only when the mapping asks for one (a
    helper whose transcript cannot be read now keeps what the store holds of it)."""

    def __init__(self, database: Database, session_id: str) -> None:
        self.database = database
        self.session_id = session_id
        self.found: dict[str, StoredActor | None] = {}

    def _get(self, actor_id: str) -> StoredActor | None:
        if actor_id not in self.found:
            try:
                self.found[actor_id] = stored_actor(self.database, self.session_id, actor_id)
            except apsw.Error as exc:
                raise StoreError(str(self.database.path), describe_sqlite_error(exc)) from None
        return self.found[actor_id]

    def __getitem__(self, actor_id: str) -> StoredActor:
        found = self._get(actor_id)
        if found is None:
            raise KeyError(actor_id)
        return found

    def __contains__(self, actor_id: object) -> bool:
        return isinstance(actor_id, str) and self._get(actor_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(name for name, found in self.found.items() if found is not None)

    def __len__(self) -> int:
        return sum(found is not None for found in self.found.values())
