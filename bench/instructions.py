"""The cold ingest's work counted in instructions, against its floors counted the same way.

The bookkeeping of the wall-time split (``bench/overhead.py``) is CPU time: the in-line ingest's
less its start-up's and its floors', each measured in a process of its own. On a machine whose
pace moves by a fifth within minutes, and where the same instructions can take longer in one
process than in another, CPU time cannot tell Python the ingest runs beyond the floor from the
floor's own work going slower. The instructions a process executes can: valgrind's cachegrind
counts them (user space only, without its cache simulation), the same from run to run.

For one slice (a shape's first), each under cachegrind, in a fresh store where one is written:
- *in line*: ``postrun ingest`` of the slice with no ingest processes, as the split's;
- *start-up*: ``postrun ingest`` of an empty folder;
- *work floor*: the work floor's own timer over the slice (``bench/workfloor.py``), less the
  same timer given no session (its interpreter and imports);
- *SQLite floor*: the SQLite floor's timer (``bench/sqlitefloor.py``) with two passes, less
  with one: one pass's writes.

What is left of the in-line count is the ingest's own: bookkeeping in instructions. The
kernel's work (the WAL's writes, the files' reads) is in none of the counts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import sqlitefloor, workfloor
from bench.overhead import Overhead
from bench.proc import ingest_env, postrun_command

_CACHEGRIND = [
    "valgrind",
    "--tool=cachegrind",
    "--cache-sim=no",
    "--cachegrind-out-file=/dev/null",
    # Not the ingest with its processes: valgrind slows each differently, so they share the work
    # otherwise than in a run, and one killed at the end (``ahead.end``) leaves no count.
]
_REFS = re.compile(r"^==\d+== I\s+refs:\s+([\d,]+)$", re.MULTILINE)
_TIMEOUT = 3600.0  # cachegrind runs Python about 25 times slower


def available() -> bool:
    return shutil.which("valgrind") is not None


@dataclass(frozen=True, slots=True)
class Instructions:
    """Instructions of one slice's in-line ingest, its start-up and its floors."""

    inline: int
    startup: int
    work: int  # mapping, records and raw copies
    sqlite: int

    @property
    def beyond(self) -> int:
        """The in-line ingest's own: what it executes beyond its start-up and floors."""
        return self.inline - self.startup - self.work - self.sqlite

    def describe(self) -> str:
        giga = 1e9
        return (
            f"in line {self.inline / giga:.2f} G = start-up {self.startup / giga:.2f} G, work floor"
            f" {(self.work + self.sqlite) / giga:.2f} G (mapping, records, raw copies {self.work / giga:.2f} G;"
            f" SQLite {self.sqlite / giga:.2f} G), beyond them {self.beyond / giga:.2f} G"
            f" ({self.beyond / self.inline:.1%} of in line)"
        )

    def against(self, overhead: Overhead) -> str:
        """The same parts in CPU time (``overhead``, the median trial's split), beside their share
        in instructions."""
        bookkeeping = overhead.inline_cpu_seconds - overhead.startup_seconds - overhead.floor_cpu_seconds
        return (
            f"no target: in CPU time (the median trial) the bookkeeping took {bookkeeping:.2f} s,"
            f" {bookkeeping / overhead.inline_cpu_seconds:.1%} of the in-line ingest; in instructions"
            f" {self.beyond / self.inline:.1%}: the rest of its time is the floors' own instructions taking"
            " longer in the ingest than in the floors' processes, and the kernel's work (no count here holds it)"
        )


def _counted(args: Sequence[str], env: Mapping[str, str] | None = None, stdin: str = "") -> int:
    """The user-space instructions ``args`` executes (it must succeed)."""
    finished = subprocess.run(
        [*_CACHEGRIND, *args],
        input=stdin.encode(),
        capture_output=True,
        env=None if env is None else dict(env),
        timeout=_TIMEOUT,
        check=False,
    )
    found = counts(finished.stderr.decode(errors="replace"))
    if finished.returncode != 0 or not found:
        raise RuntimeError(f"cachegrind {' '.join(args[:3])}…: exit {finished.returncode}: {finished.stderr[-2000:]!r}")
    return sum(found)


def counts(report: str) -> list[int]:
    """The instructions of each process cachegrind followed, from its report (standard error)."""
    return [int(count.replace(",", "")) for count in _REFS.findall(report)]


def measure_instructions(
    root: Path, targets: Sequence[str], env: Mapping[str, str], *, session_ids: Sequence[str], workdir: Path
) -> Instructions:
    """The counts for ``targets`` (session folders under ``root``, ``session_ids`` their ids),
    ``env`` as the cold ingest's, stores under ``workdir``."""
    command = postrun_command()
    inline_db = workdir / "inline" / "postrun.db"
    paths = [str(root / target) for target in targets]
    inline = _counted([*command, "ingest", "--agent", "cline", *paths], ingest_env(env, inline_db, in_line=True))
    empty = workdir / "startup" / "sessions"
    empty.mkdir(parents=True, exist_ok=True)
    startup_env = workfloor.writer_env(workdir / "startup", empty)  # as the split's start-up
    startup_env = ingest_env(startup_env, Path(startup_env["POSTRUN_DB"]), in_line=True)
    startup = _counted([*command, "ingest", "--agent", "cline", str(empty)], startup_env)
    timer = workfloor.timer_command(root)
    work = _counted(timer, stdin="\n".join(targets)) - _counted(timer)
    ids = "\n".join(session_ids)
    scratch = workdir / "sqlite-floor"
    passes = [_counted(sqlitefloor.timer_command(inline_db, scratch, repeats), stdin=ids) for repeats in (1, 0)]
    return Instructions(inline, startup, work, passes[0] - passes[1])
