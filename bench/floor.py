"""The parse floor: the time to only read and JSON-parse files, with the parser Postrun uses.

Postrun parses session files with ``orjson.loads`` (``postrun.jsonio``), so the floor is
``orjson.loads(path.read_bytes())`` per file, timed in a fresh Python process with the
garbage collector in its default state (as Postrun runs), so the bench's own heap does not
slow the collections a big parse triggers. One untimed pass first: the floor and the
ingest both read from the page cache.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from bench.stats import median

PARSER = f"orjson {orjson.__version__} (orjson.loads, as postrun.jsonio)"
_TIMER = """
import sys, time, orjson
paths = sys.stdin.read().splitlines()
repeats = int(sys.argv[1])
def once():
    started = time.perf_counter()
    for path in paths:
        with open(path, "rb") as handle:
            orjson.loads(handle.read())
    return time.perf_counter() - started
once()
print(orjson.dumps([once() for _ in range(repeats)]).decode())
"""


def parse_floor(paths: Sequence[Path], *, repeats: int = 3) -> float:
    """The median time of ``repeats`` timed passes over ``paths``."""
    finished = subprocess.run(
        [sys.executable, "-c", _TIMER, str(repeats)],
        input="\n".join(str(p) for p in paths).encode(),
        capture_output=True,
        check=True,
    )
    return median(orjson.loads(finished.stdout))
