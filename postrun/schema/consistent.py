"""Steps found free of reference problems, and what they reference.

A live session is checked again after each message: its steps are those of the last check
(the very same records, the mapping cache kept them) with a few new or re-made at the end.
When the records they reference still exist, only those need checking
(``ConsistentSteps.extended``) instead of walking thousands of them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from postrun.prefix import same_prefix


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
        """``steps`` found consistent by checking only those after the start they share with
        these (identity, not equality: a record changed in place is not trusted); None when
        they share none (and these are not none at all), or a step, old or new, does not fit
        the session's records.

        These steps after the shared start are taken out first: their seqs and ids are unique
        among these, so taking those out is exact; the records they name stay named, which
        can only make the fit stricter (a miss is then checked in full)."""
        count = same_prefix(steps, self.steps)
        if not count and self.steps:
            return None
        kept = self
        if count < len(self.steps):
            dropped = _named(self.steps[count:])
            kept = replace(self, steps=self.steps[:count], seqs=self.seqs - dropped.seqs, ids=self.ids - dropped.ids)
        new = _named(tuple(steps[count:]))
        if not (
            kept.fits(session_id, turn_ids, actor_ids, segments)
            and new.fits(session_id, turn_ids, actor_ids, segments)
            and kept.seqs.isdisjoint(new.seqs)
            and kept.ids.isdisjoint(new.ids)
        ):
            return None
        return ConsistentSteps(
            (*kept.steps, *new.steps),
            kept.session_ids | new.session_ids,
            kept.turn_ids | new.turn_ids,
            kept.actor_ids | new.actor_ids,
            kept.segments | new.segments,
            kept.seqs | new.seqs,
            kept.ids | new.ids,
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
