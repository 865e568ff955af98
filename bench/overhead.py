"""Where a cold ingest's wall time goes beyond its work floor, measured in the same run.

The work floor (``bench/workfloor.py`` and ``bench/sqlitefloor.py``) is the CPU of the work no
design can skip, spread over the cores. Beside the cold ingest (its processes included), the
same sessions are ingested once more in line (``POSTRUN_INGEST_PROCESSES=0``: one process, no
ingest processes) into a fresh store. Then each CPU second the ingest spends is one of:

- the work floor's;
- *start-up*: the writer's, before any session (``postrun ingest`` of an empty folder);
- *bookkeeping*: the rest of what the in-line ingest spends, storing as the store's guarantees
  require beyond writing the rows (each session's savepoint and guard, what is stored read
  back, the vault's rows, progress and the mirror's outbox) and whatever mapping costs beyond
  the floor's own pass;
- *processes*: what the ingest with its processes spends beyond the in-line one (their
  start-up, each session sent to a process and its prepared rows sent back);

and the cores left idle make up the rest of the wall time. Each part is given in wall
seconds (CPU seconds ÷ cores), so they add up to the wall time exactly: the part that would
have to shrink for a target is read off directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.proc import Finished, ingest_fresh
from bench.workfloor import Startup


class _Ran(Protocol):
    """A cold ingest as the OS accounted for it (``ColdRun``, ``Finished``)."""

    @property
    def wall_seconds(self) -> float: ...

    @property
    def cpu_seconds(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Overhead:
    wall_seconds: float  # the cold ingest, its processes included
    cpu_seconds: float
    inline_cpu_seconds: float  # the same sessions ingested in line
    floor_cpu_seconds: float  # the work floor's CPU (mapping, records, raw copies, SQLite)
    startup_seconds: float  # the writer's start-up: an empty ingest's CPU time
    cores: int

    @classmethod
    def of(cls, cold: _Ran, inline_cpu: float, floor_cpu: float, startup: Startup, cores: int) -> Overhead:
        """The split of ``cold``, against its in-line ingest's CPU and its work floor's."""
        return cls(cold.wall_seconds, cold.cpu_seconds, inline_cpu, floor_cpu, startup.writer_work_seconds, cores)

    def parts(self) -> dict[str, float]:
        """The wall time's parts in wall seconds; they add up to ``wall_seconds``."""
        spread = float(self.cores)
        return {
            "work floor": self.floor_cpu_seconds / spread,
            "start-up": self.startup_seconds / spread,
            "bookkeeping": (self.inline_cpu_seconds - self.startup_seconds - self.floor_cpu_seconds) / spread,
            "processes": (self.cpu_seconds - self.inline_cpu_seconds) / spread,
            "idle cores": self.wall_seconds - self.cpu_seconds / spread,
        }

    def to_meet(self, target: float) -> str:
        """What the parts beyond the work floor and the start-up (the pipeline's: bookkeeping,
        processes, idle cores) would have to shrink to for wall ÷ work floor ≤ ``target`` (issue
        27 asks, per missed figure, what would move it); empty when the ratio is met."""
        parts = self.parts()
        floor, startup = parts["work floor"], parts["start-up"]
        pipeline = self.wall_seconds - floor - startup
        allowed = target * floor - floor - startup
        if pipeline <= allowed:
            return ""
        if allowed <= 0:
            return f"to meet ≤ {target:g}× the start-up alone takes more than the target leaves beside the work floor"
        return (
            f"to meet ≤ {target:g}× the pipeline's parts (bookkeeping, processes, idle cores: {pipeline:.2f} s) would"
            f" have to take at most {allowed:.2f} s, {1 - allowed / pipeline:.0%} less"
        )

    def describe(self) -> str:
        """One line: the parts, and the in-line ingest they come from."""
        parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.parts().items())
        return (
            f"wall {self.wall_seconds:.2f} s = {parts} (CPU ÷ {self.cores} cores: the start-up's"
            f" {self.startup_seconds:.2f} s of one core counts {self.startup_seconds / self.cores:.2f} s, the"
            " other cores' wait meanwhile is in the idle cores; in line the same sessions took"
            f" {self.inline_cpu_seconds:.2f} s of CPU, with the processes {self.cpu_seconds:.2f} s)"
        )


def measure_inline(targets: Sequence[str], env: Mapping[str, str], *, kind: str, db: Path, sessions: int) -> Finished:
    """``postrun ingest --agent kind targets`` (``sessions`` sessions) in line, into a fresh store
    at ``db`` (``env`` as the cold ingest's, its own store replaced)."""
    return ingest_fresh(targets, env, kind=kind, db=db, sessions=sessions, in_line=True)
