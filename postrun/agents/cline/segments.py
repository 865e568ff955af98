"""Segments from Cline's checkpoint run counts: one per run the user started.

Cline records one checkpoint per user run (git workspaces only); ``runCount``
is the run's user-turn number. Each distinct run count is one segment, and turn
n belongs to the segment of the largest run count <= n. No timestamps are
compared: message times are not monotonic.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from postrun.timestamps import epoch_ms, iso_from_ms


@dataclass(frozen=True, slots=True)
class SegmentPlan:
    run_counts: tuple[int, ...]  # distinct, ascending; empty when Cline recorded none
    segments: tuple[dict[str, Any], ...]  # v1.2 segment records

    def segment_for_turn(self, turn_index: int) -> int:
        """The segment index of turn ``turn_index`` (turn 0 and early turns: 0)."""
        return max(bisect_right(self.run_counts, turn_index) - 1, 0)


def plan_segments(checkpoint: Any, *, started_at: str, ended_at: str | None, source_files: list[str]) -> SegmentPlan:
    """Segments of a session from its manifest's ``metadata.checkpoint`` (any shape)."""
    runs = _run_starts(checkpoint)
    counts = tuple(sorted(runs))
    starts = [started_at] + [runs[count] for count in counts[1:]]
    segments: list[dict[str, Any]] = []
    for index, start in enumerate(starts):
        segment: dict[str, Any] = {
            "index": index,
            "start_reason": "start" if index == 0 else "resume",
            "started_at": start,
            "source_files": list(source_files),
        }
        end = starts[index + 1] if index + 1 < len(starts) else ended_at
        if end is not None:
            segment["ended_at"] = end
        segments.append(segment)
    return SegmentPlan(counts, tuple(segments))


def _run_starts(checkpoint: Any) -> dict[int, str]:
    """Run count -> ISO start of the run (earliest ``createdAt`` of a repeated count)."""
    history = checkpoint.get("history") if isinstance(checkpoint, dict) else None
    earliest: dict[int, int] = {}
    for entry in history if isinstance(history, list) else ():
        if not isinstance(entry, dict):
            continue
        count, created = entry.get("runCount"), epoch_ms(entry.get("createdAt"))
        if type(count) is not int or count < 1 or created is None:
            continue
        earliest[count] = min(created, earliest.get(count, created))
    return {count: iso_from_ms(created) for count, created in earliest.items()}
