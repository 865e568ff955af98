"""A mapped step keeps an exact copy of its JSON: capture caches thousands of them."""

from __future__ import annotations

import tracemalloc

from postrun.records import StepRow, canonical_json
from tests.support.builders import command_step


def test_rows_hold_only_the_bytes_of_their_json() -> None:
    record = command_step(0, "cat big.log", "x" * 2000)
    tracemalloc.start()
    try:
        rows = [StepRow.build({**record, "id": f"call_{i}#0"}) for i in range(200)]
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows[0].blob == canonical_json(rows[0].record)
    per_row = held / len(rows)
    # The JSON is about 2.4 KB; orjson's own buffer for it would be several times that.
    assert per_row < 2 * len(rows[0].blob) + 2048, per_row
