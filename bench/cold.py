"""1. Cold ingest: the history through the real ``postrun ingest`` process, against the parse floor.

The history is split into ``runs`` interleaved slices (session 0, runs, 2·runs, … in the
first), each ingested by its own ``postrun ingest`` process into the same store, so the
runs are repeats over the same distribution and the store ends up holding the whole
history (the warm start measures over it). The floor of each run is the parse time of the
same files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.floor import parse_floor
from bench.history import WrittenSession
from bench.peer import Agentsview, PeerRun
from bench.proc import Finished, postrun_command, run
from bench.stats import median

_INGESTED = re.compile(r"^ingested cline session \S+: (?P<steps>\d+) steps?", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ColdRun:
    sessions: int
    steps: int
    source_bytes: int
    wall_seconds: float
    cpu_seconds: float
    max_rss_bytes: int
    floor_seconds: float
    peer: PeerRun | None = None

    @property
    def ratio(self) -> float:
        return self.wall_seconds / self.floor_seconds

    @property
    def peer_ratio(self) -> float:
        """Postrun's wall time over the peer's, on the same slice."""
        return self.wall_seconds / self.peer.wall_seconds if self.peer else float("nan")

    @property
    def cores_used(self) -> float:
        """CPU time over wall time: how many cores the ingest kept busy, on average."""
        return self.cpu_seconds / self.wall_seconds

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.wall_seconds

    @property
    def mb_per_second(self) -> float:
        return self.source_bytes / 2**20 / self.wall_seconds


@dataclass(frozen=True, slots=True)
class ColdResult:
    runs: tuple[ColdRun, ...]

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.runs)

    def median(self, name: str) -> float:
        return median([getattr(r, name) for r in self.runs])


def measure_cold(
    sessions: Sequence[WrittenSession], env: Mapping[str, str], *, runs: int, peer: Agentsview | None = None
) -> ColdResult:
    results: list[ColdRun] = []
    for index in range(runs):
        part = sessions[index::runs]
        files = [path for s in part for path in (s.messages_path, s.manifest_path)]
        floor = parse_floor(files)
        os.sync()  # the generator's writeback is not the ingest's cost
        finished = run(
            [*postrun_command(), "ingest", "--agent", "cline", *(str(s.messages_path.parent) for s in part)], env
        )
        _check(finished, len(part))
        steps = sum(int(m["steps"]) for m in _INGESTED.finditer(finished.stdout))
        results.append(
            ColdRun(
                sessions=len(part),
                steps=steps,
                source_bytes=sum(s.bytes for s in part),
                wall_seconds=finished.wall_seconds,
                cpu_seconds=finished.cpu_seconds,
                max_rss_bytes=finished.tree_rss_bytes,
                floor_seconds=floor,
                peer=peer.sync(part) if peer is not None else None,
            )
        )
    return ColdResult(tuple(results))


def _check(finished: Finished, expected: int) -> None:
    ingested = len(_INGESTED.findall(finished.stdout))
    if finished.returncode != 0 or ingested != expected:
        raise RuntimeError(
            f"postrun ingest: exit {finished.returncode}, {ingested} of {expected} sessions ingested:"
            f" {finished.stderr[-2000:]}"
        )
