"""Re-flagging a store after the flag rules changed, a transaction at a time, on a real store."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.ingest.reflag import Reflag
from postrun.review.flags import RULES_VERSION
from postrun.store.db import Database
from postrun.store.flags import set_rules_version, stored_rules_version
from postrun.store.forget import forget_sessions
from tests.reliability.kit import Synthetic, synthetic_id

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_reflag_goes_a_transaction_at_a_time_gives_way_and_skips_what_was_forgotten_meanwhile(
    tmp_path: Path,
) -> None:
    root = tmp_path / "cline" / "sessions"
    ids = [synthetic_id(index) for index in range(3)]
    with Database.open(tmp_path / "postrun.db") as database:
        ingester = Ingester(database, max_bytes=2**26)
        for index, session_id in enumerate(ids):
            session = Synthetic(session_id, seed=index)
            session.grow()
            session.write(root)
            ingester.ingest(SessionLocation.in_root(root, session_id))
        set_rules_version(database, "flags-0")
        assert Reflag.due(database, clock=lambda: NOW, captured_on="h") is not None
        # Every tick of this timer is a second: each transaction holds one session.
        ticks = itertools.count()
        reflag = Reflag(database, list(ids), clock=lambda: NOW, captured_on="h", timer=lambda: float(next(ticks)))
        advanced: list[int] = []
        assert not reflag.run(give_way=lambda: True, advance=lambda: advanced.append(reflag.done))
        assert (reflag.done, advanced, stored_rules_version(database)) == (1, [1], "flags-0")
        forget_sessions(database, [ids[1]], now="2026-12-01T12:00:00Z")
        assert reflag.run(give_way=lambda: False)
        assert reflag.done == 3 and stored_rules_version(database) == RULES_VERSION
        stored = [row[0] for row in database.execute("SELECT id FROM sessions ORDER BY id")]
        assert stored == [ids[0], ids[2]]  # the forgotten one was not written back
        assert Reflag.due(database, clock=lambda: NOW, captured_on="h") is None  # flagged under these rules
