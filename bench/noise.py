"""How busy the rest of the machine was during a run: CPU used outside the bench's processes.

The bench's own share is this process plus every child it reaped (``postrun`` runs,
captures, floor timers); the rest of the machine's CPU time went to other processes and
to kernel threads (some on the bench's behalf, such as writing back the files it made).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil


@dataclass(frozen=True, slots=True)
class CpuMark:
    wall: float
    machine: float  # CPU seconds used by every process since boot (all cores)
    bench: float  # CPU seconds of this process and its reaped children

    @classmethod
    def now(cls) -> CpuMark:
        machine = psutil.cpu_times()
        own = os.times()
        busy = machine.user + machine.nice + machine.system + getattr(machine, "irq", 0.0)
        busy += getattr(machine, "softirq", 0.0) + getattr(machine, "steal", 0.0)
        return cls(time.monotonic(), busy, own.user + own.system + own.children_user + own.children_system)


def others_share(start: CpuMark, end: CpuMark) -> float:
    """The share (0..1) of the machine's CPU capacity used by other processes between two marks."""
    capacity = (end.wall - start.wall) * (os.cpu_count() or 1)
    others = (end.machine - start.machine) - (end.bench - start.bench)
    return max(others, 0.0) / capacity if capacity > 0 else 0.0
