"""The bench's count of instructions: an ingest against its floors, each process's count read
from cachegrind's report."""

from __future__ import annotations

from bench.instructions import Instructions, counts
from bench.overhead import Overhead

_REPORT = """==101== Cachegrind, a high-precision tracing profiler
==101== Command: python -m postrun ingest --agent cline /s/a /s/b
==102== I   refs:      1,234,567,890
==101== I   refs:      14,072,321,596
==101== error calling PR_SET_PTRACER, vgdb might block
"""


def test_each_process_s_count_is_read_from_cachegrind_s_report() -> None:
    assert counts(_REPORT) == [1_234_567_890, 14_072_321_596]  # an ingest process's, then the writer's
    assert counts("==7== Command: python\n") == []


def test_what_the_ingest_executes_beyond_its_floors_beside_the_cpu_time_split() -> None:
    counted = Instructions(inline=14_070_000_000, startup=1_410_000_000, work=11_240_000_000, sqlite=1_030_000_000)
    assert counted.beyond == 390_000_000
    assert counted.describe() == (
        "in line 14.07 G = start-up 1.41 G, work floor 12.27 G (mapping, records, raw copies 11.24 G;"
        " SQLite 1.03 G), beyond them 0.39 G (2.8% of in line)"
    )
    # The median trial's CPU: in line 2.07 s = start-up 0.27 s, floor 1.48 s, bookkeeping 0.32 s.
    split = Overhead(wall_seconds=1.19, cpu_seconds=2.14, inline_cpu_seconds=2.07, floor_cpu_seconds=1.48,
                     startup_seconds=0.27, cores=2)  # fmt: skip
    against = counted.against(split)
    assert "the bookkeeping took 0.32 s, 15.5% of the in-line ingest; in instructions 2.8%:" in against
