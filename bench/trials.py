"""A cold ingest against its work floor, the two timed back to back, a few times over.

This machine kind's speed moves by a fifth or more within minutes (BENCHMARKS.md, What limits
each figure): a cold ingest timed in a slow minute against a work floor measured minutes later in
a fast one read 1.89× where the same code had read 1.34× a run before, its CPU time for the same
work 30 % above the next slice's. So each trial ingests the same sessions cold into a fresh
store, then at once measures their work floor (``bench/workfloor.py``, and SQLite's from that
store, ``bench/sqlitefloor.py``), ingests them once more in line (``bench/overhead.py``, for
the split of the wall time) and measures the start-up (``startup_floor``, best of 3, for the
floor with the start-up): the parts of one trial share the machine's pace. The figure is the
trial whose ratio is the median. (A start-up measured once, best of 5, set beside a trial's floor
mixed paces: a floor from a slow minute against a start-up from a fast one made the start-up look
a smaller share of the floor than it is.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.overhead import Overhead, measure_inline
from bench.proc import Finished, ingest_fresh, postrun_command, stored_ids
from bench.sqlitefloor import sqlite_floor
from bench.workfloor import Startup, WorkFloor, startup_floor, work_floor


@dataclass(frozen=True, slots=True)
class Trial:
    """One cold ingest of the sessions into a fresh store, and what was measured right after it."""

    cold: Finished
    work: WorkFloor
    sqlite_seconds: float  # SQLite's CPU (``SqliteFloor.cpu_seconds``), as the work floor's other parts
    inline_cpu_seconds: float  # the same sessions ingested in line (no ingest processes), into a fresh store
    startup: Startup  # the start-up, measured last

    @property
    def floor_cpu_seconds(self) -> float:
        """The work floor in CPU time: mapping, records, raw copies and SQLite."""
        return self.work.cpu_seconds + self.sqlite_seconds

    def floor_seconds(self, cores: int) -> float:
        """The least wall time the cold ingest can take on ``cores``: its work floor spread."""
        return self.floor_cpu_seconds / cores

    def ratio(self, cores: int) -> float:
        """The cold ingest's wall time over its work floor."""
        return self.cold.wall_seconds / self.floor_seconds(cores)

    def started_floor_seconds(self, cores: int) -> float:
        """The least wall time with the start-up (``Startup.floor_with``), both of this trial."""
        return self.startup.floor_with(self.floor_seconds(cores), cores)

    def where_it_goes(self, cores: int, target: float) -> str:
        """The split of the wall time beyond the work floor (``Overhead.describe``) and, when the
        ratio misses ``target`` though the start-up does not rule it out, what the pipeline's
        parts would have to shrink to (``Overhead.to_meet``)."""
        overhead = self.overhead(cores)
        if self.startup.rules_out(self.floor_seconds(cores), cores, target):
            return overhead.describe()
        needed = overhead.to_meet(target)
        return overhead.describe() + (f"; {needed}" if needed else "")

    def overhead(self, cores: int) -> Overhead:
        """Where the cold ingest's wall time went beyond the work floor."""
        return Overhead.of(self.cold, self.inline_cpu_seconds, self.floor_cpu_seconds, self.startup, cores)


@dataclass(frozen=True, slots=True)
class Trials:
    trials: tuple[Trial, ...]
    cores: int

    @property
    def median(self) -> Trial:
        """The trial whose ratio is the median (of an even count, the lower one)."""
        ranked = sorted(self.trials, key=lambda trial: trial.ratio(self.cores))
        return ranked[(len(ranked) - 1) // 2]

    @property
    def floor_seconds(self) -> float:
        """The median trial's work floor, spread over the cores."""
        return self.median.floor_seconds(self.cores)

    def describe(self) -> str:
        """Each trial as wall s / floor s / ratio, in the order they ran."""
        return "; ".join(
            f"{t.cold.wall_seconds:.2f} / {t.floor_seconds(self.cores):.2f} / {t.ratio(self.cores):.2f}×"
            for t in self.trials
        )


def measure_trials(
    kind: str,
    root: Path,
    targets: Sequence[str],
    env: Mapping[str, str],
    *,
    sessions: int,
    count: int,
    cores: int,
    workdir: Path,
) -> Trials:
    """``count`` trials of ``postrun ingest --agent kind`` of ``targets`` (names under ``root``, as
    ``work_floor`` takes them; "." is every session under it), ``sessions`` sessions, each into a
    fresh store under ``workdir`` (``env`` as the cold ingest's, its own store replaced)."""
    paths = [str(root / target) for target in targets]
    command = postrun_command()  # compiled once, not before each trial's start-up
    found = []
    for number in range(count):
        db = workdir / f"trial-{number}" / "postrun.db"
        os.sync()  # what the last trial wrote (its stores, the SQLite floor's) is not this ingest's cost
        cold = ingest_fresh(paths, env, kind=kind, db=db, sessions=sessions)
        found.append(
            Trial(
                cold=cold,
                work=work_floor(root, targets, kind=kind),
                sqlite_seconds=sqlite_floor(db, stored_ids(cold, kind), scratch=workdir / "sqlite-floor").cpu_seconds,
                inline_cpu_seconds=measure_inline(
                    paths, env, kind=kind, db=workdir / "inline" / "postrun.db", sessions=sessions
                ).cpu_seconds,
                startup=startup_floor(command, workdir / "startup", repeats=3),
            )
        )
    return Trials(tuple(found), cores)
