"""The work floor: the CPU time of the work a cold ingest cannot skip, each part on its own.

Beside the parse floor and the SQLite floor, this says what the cold-ingest target leaves
for everything else on this machine. For the first cold-ingest slice, in a fresh Python
process (the files are in the page cache: the cold ingest has just read them):

- *mapping*: the sessions found (``resolve_targets``, as ``postrun ingest`` lists its
  targets), and each read, parsed, mapped, flagged and validated as a catch-up's ingest
  process does it (``postrun.ingest.prepare.prepare_location``), with no store;
- *records*: each mapped step made the row the store writes (``postrun.store.write.step_write``:
  its columns, its record compressed as the store keeps it, which the store-size target needs,
  and its search index's text);
- *raw copies*: each file the vault keeps, hashed (SHA-256) and compressed at the vault's
  level (without the vault's dictionary), which the vault needs.

CPU time (``time.process_time``) per part, one pass. All three are single-threaded work that
spreads over processes, so on ``cores`` cores a cold ingest cannot take less wall time than
(mapping + records + raw copies + SQLite floor) / cores, whatever else it does.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from bench.proc import isolated_env, run

TIMER = """
import sys, time, orjson, zstandard
from pathlib import Path
from postrun.agents.registry import adapter
from postrun.ingest.prepare import Known, MapRules, Prepared, prepare_location
from postrun.store import dictionary
from postrun.store.vault import blob_hash
from postrun.store.write import step_write
root, max_bytes, kind = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
targets = [str(root / i) for i in sys.stdin.read().split()]
rules = MapRules(max_bytes)
raw = zstandard.ZstdCompressor(level=dictionary.LEVEL)
agent = adapter(kind)  # imported before the timing: its import is the start-up's
started = time.process_time()
listing = agent.resolve_targets(targets, [root])
mapping = time.process_time() - started
records = copies = 0.0
steps = 0
for location in listing.sessions:
    started = time.process_time()
    _, prepared, _ = prepare_location(location, Known(None), {}, rules)
    mapped = time.process_time()
    if not isinstance(prepared, Prepared):
        raise SystemExit(f"{location.where}: {prepared}")
    for row in prepared.mapped.steps:
        step_write(row)
    packed = time.process_time()
    for kept in prepared.raw:
        blob_hash(kept.data)
        raw.compress(kept.data)
    done = time.process_time()
    mapping += mapped - started
    records += packed - mapped
    copies += done - packed
    steps += len(prepared.mapped.steps)
print(orjson.dumps({"steps": steps, "mapping": mapping, "records": records, "copies": copies}).decode())
"""


@dataclass(frozen=True, slots=True)
class WorkFloor:
    steps: int
    mapping_seconds: float
    records_seconds: float
    copies_seconds: float

    @property
    def cpu_seconds(self) -> float:
        return self.mapping_seconds + self.records_seconds + self.copies_seconds


def timer_command(root: Path, *, kind: str = "cline", max_bytes: int = 64 * 2**20) -> list[str]:
    """The work floor's timer over sessions under ``root``, its targets given on standard input."""
    return [sys.executable, "-c", TIMER, str(root), str(max_bytes), kind]


def work_floor(root: Path, targets: Sequence[str], *, kind: str = "cline", max_bytes: int = 64 * 2**20) -> WorkFloor:
    """The CPU time of finding and mapping the sessions of ``targets`` (paths relative to
    ``root``, as ``postrun ingest`` takes them; "." is every session under it) of agent
    ``kind``, making each step's row and compressing the raw copies kept."""
    finished = subprocess.run(
        timer_command(root, kind=kind, max_bytes=max_bytes),
        input="\n".join(targets).encode(),
        capture_output=True,
        check=True,
    )
    found = orjson.loads(finished.stdout)
    return WorkFloor(found["steps"], found["mapping"], found["records"], found["copies"])


@dataclass(frozen=True, slots=True)
class Startup:
    """What starting an ingest costs before any session is read, best of a few."""

    writer_seconds: float  # wall time of ``postrun ingest`` of an empty folder: interpreter, imports, settings
    version_seconds: float  # CPU time of ``postrun --version``: the interpreter and the CLI's own imports
    process_seconds: float  # CPU time of an ingest process's imports (they overlap the writer's start-up)
    writer_cpu_seconds: float | None = None  # CPU time of that empty ingest (None: taken as its wall time)

    @property
    def writer_work_seconds(self) -> float:
        """The writer's start-up as work a core must do: its CPU time. Its wall time is not: on a
        loaded machine it grows with the wait for a core (0.52 s of wall against about 0.3 s of
        CPU), and counted as work it raised the floor with the start-up past what is reachable
        and made the bookkeeping beside it negative."""
        return self.writer_seconds if self.writer_cpu_seconds is None else self.writer_cpu_seconds

    def floor_with(self, floor_seconds: float, cores: int) -> float:
        """The least wall time of an ingest whose work floor is ``floor_seconds`` (its CPU spread
        over ``cores``), its start-up included, whatever its design: no session is prepared before
        an interpreter has imported what preparing needs (``process_seconds``, in a process of
        its own or in the writer), so until then no core does more of the counted work than the
        writer's start-up; the rest of that start-up (the writer must start: it stores) and the
        work floor's CPU then spread over every core at best. Since ingest processes prepare
        while the writer starts (cebc9dc), the start-up is not all before the work floor."""
        writer = self.writer_work_seconds
        first = min(self.process_seconds, writer)
        return first + (floor_seconds * cores + writer - first) / cores

    def rules_out(self, floor_seconds: float, cores: int, target: float) -> bool:
        """True when the start-up and the work floor together are above ``target`` work floors."""
        return self.floor_with(floor_seconds, cores) / floor_seconds > target

    def against(self, floor_seconds: float, cores: int, target: float) -> str:
        """What the start-up leaves of a wall ÷ work floor ``target`` (``floor_seconds`` > 0): the
        start-up and the work floor together (``floor_with``), in work floors. Above ``target``, no
        ingest of that size can meet it while starting takes as long as it did here."""
        with_it = self.floor_with(floor_seconds, cores) / floor_seconds
        if self.rules_out(floor_seconds, cores, target):
            # The verdict holds for this size only (issue 27 asks, per missed figure, for the floor
            # that makes it impossible): the start-up's share, floor_with(F) - F, is the same
            # whatever F, so it stops ruling the target out from the work floor said here.
            reach = (self.floor_with(floor_seconds, cores) - floor_seconds) / (target - 1)
            return (
                f"start-up and work floor together are already {with_it:.2f}× the work floor (nothing prepared"
                " before an interpreter imported what preparing needs, the writer's start-up spread over the"
                " cores with the rest): at this start-up no ingest of this size can meet the target, as the"
                " work floor grows with the history and the start-up does not; from a work floor of"
                f" {reach:.2f} s ({reach / floor_seconds:.2f}× this one) the start-up no longer rules it out"
            )
        return (
            f"start-up and work floor together are {with_it:.2f}× the work floor (the writer's start-up spread"
            " over the cores once preparing can start): the rest is the pipeline's"
        )


def startup_floor(postrun: Sequence[str], workdir: Path, *, repeats: int = 5) -> Startup:
    """The wall time of ``postrun ingest`` of an empty folder in an environment of its own under
    ``workdir``, the CPU time of ``postrun --version`` and of an ingest process's imports (fresh
    processes)."""
    empty = workdir / "sessions"
    empty.mkdir(parents=True, exist_ok=True)
    env = writer_env(workdir, empty)
    writer = writer_cpu = float("inf")
    for _ in range(repeats):
        finished = run([*postrun, "ingest", "--agent", "cline", str(empty)], env)
        if finished.returncode != 0:
            raise RuntimeError(f"postrun ingest of an empty folder: exit {finished.returncode}: {finished.stderr}")
        writer = min(writer, finished.wall_seconds)
        writer_cpu = min(writer_cpu, finished.cpu_seconds)
    process = [sys.executable, "-P", "-c", "import postrun.ingest.pool_process, postrun.agents.cline.adapter"]
    return Startup(writer, _child_cpu([*postrun, "--version"], repeats), _child_cpu(process, repeats), writer_cpu)


def writer_env(workdir: Path, sessions: Path) -> dict[str, str]:
    """The environment of the empty ingest that measures the writer's start-up: no ingest
    processes, so that its CPU (``wait4`` counts the children it reaped) is the writer's own;
    the processes' imports are measured apart (``process_seconds``), and counted both there and
    here they made the start-up's bound 0.05 s a slice too high."""
    return isolated_env(
        workdir / "home",
        db=workdir / "store" / "postrun.db",
        cline_dir=sessions,
        extra={"POSTRUN_INGEST_PROCESSES": "0"},
    )


def _child_cpu(command: Sequence[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(list(command), capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return best
