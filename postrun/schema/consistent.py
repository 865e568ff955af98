"""Steps found free of reference problems, and what they reference.

A live session is checked again after each message: its steps are those of the last check
(the very same records, the mapping cache kept them) and a few new ones. When the records it
references still exist, only the new steps need checking (``ConsistentSteps.extended``)
instead of walking thousands of them again.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ConsistentSteps:
    """Steps (in order) with no reference problem, and the ids they name."""

    steps: tuple[Mapping[str, Any], ...]
    session_ids: frozenset[Any]
    turn_ids: frozenset[Any]
    actor_ids: frozenset[Any]
    segments: frozenset[Any]
    seqs: frozenset[Any]
    ids: frozenset[Any]

    @classmethod
    def found(
        cls,
        steps: Sequence[Mapping[str, Any]],
        session_id: Any,
        turn_ids: set[str],
        actor_ids: set[Any],
        segments: set[int],
    ) -> ConsistentSteps | None:
        """The steps' references when none has a problem (six set operations instead of six
        tests per step); None otherwise (then the problems are named one by one)."""
        found = _named(tuple(steps))
        return found if found.fits(session_id, turn_ids, actor_ids, segments) else None

    def fits(self, session_id: Any, turn_ids: set[str], actor_ids: set[Any], segments: set[int]) -> bool:
        """No step names a record the session lacks, and no two share a seq or an id."""
        count = len(self.steps)
        return (
            self.session_ids <= {session_id}
            and self.turn_ids <= turn_ids
            and self.actor_ids <= actor_ids
            and self.segments <= segments
            and len(self.seqs) == count
            and len(self.ids) == count
        )

    def extended(
        self,
        steps: Sequence[Mapping[str, Any]],
        session_id: Any,
        turn_ids: set[str],
        actor_ids: set[Any],
        segments: set[int],
    ) -> ConsistentSteps | None:
        """``steps`` found consistent by checking only those after these: None unless they
        begin with these very records (identity, not equality: a record changed in place is
        not trusted) and every step, old and new, fits the session's records."""
        count = len(self.steps)
        if len(steps) < count or not all(map(operator.is_, self.steps, steps)):
            return None
        new = _named(tuple(steps[count:]))
        if not (
            self.fits(session_id, turn_ids, actor_ids, segments)
            and new.fits(session_id, turn_ids, actor_ids, segments)
            and self.seqs.isdisjoint(new.seqs)
            and self.ids.isdisjoint(new.ids)
        ):
            return None
        return ConsistentSteps(
            (*self.steps, *new.steps),
            self.session_ids | new.session_ids,
            self.turn_ids | new.turn_ids,
            self.actor_ids | new.actor_ids,
            self.segments | new.segments,
            self.seqs | new.seqs,
            self.ids | new.ids,
        )


def _named(steps: tuple[Mapping[str, Any], ...]) -> ConsistentSteps:
    return ConsistentSteps(
        steps,
        frozenset(step["session_id"] for step in steps),
        frozenset(step["turn_id"] for step in steps),
        frozenset(step["actor_id"] for step in steps),
        frozenset(step["segment_index"] for step in steps),
        frozenset(step["seq"] for step in steps),
        frozenset(step["id"] for step in steps),
    )
