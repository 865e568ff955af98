"""Who did each step, as a tree: the lead's steps by turn, each helper's steps under the step
that started it (helpers of helpers too), and the helpers no stored step says it started.

The review app and the Markdown and HTML exports show actors this one way. Pure: v1.2
steps in, the same steps grouped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ROOT_ACTOR = "root"

Step = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Nesting:
    lead: dict[str, list[Step]]  # the lead's steps of each turn (by turn id), in seq order
    started: dict[str, list[str]]  # step id -> the helpers it started that have steps here
    helpers: dict[str, list[Step]]  # helper actor id -> its steps, in seq order
    unattached: list[str]  # helpers with steps here that no step here started

    def helpers_of(self, step: Step) -> list[tuple[str, list[Step]]]:
        """The helpers ``step`` started, each with its steps."""
        return [(actor_id, self.helpers[actor_id]) for actor_id in self.started.get(str(step["id"]), [])]


def helper_started(step: Step) -> str | None:
    """The actor a step started, when it started one (``payload.raw.actor_id``)."""
    raw = step["payload"].get("raw") if step["type"] == "other" else None
    actor = raw.get("actor_id") if isinstance(raw, Mapping) else None
    return actor if isinstance(actor, str) and actor != ROOT_ACTOR else None


def nest(steps: Sequence[Step]) -> Nesting:
    """``steps`` (in seq order) grouped by who took them; each helper hangs under the first step
    that started it."""
    lead: dict[str, list[Step]] = {}
    helpers: dict[str, list[Step]] = {}
    for step in steps:
        if step["actor_id"] == ROOT_ACTOR:
            lead.setdefault(str(step["turn_id"]), []).append(step)
        else:
            helpers.setdefault(str(step["actor_id"]), []).append(step)
    started: dict[str, list[str]] = {}
    attached: set[str] = set()
    for step in steps:
        actor_id = helper_started(step)
        if actor_id is not None and actor_id in helpers and actor_id not in attached:
            attached.add(actor_id)
            started.setdefault(str(step["id"]), []).append(actor_id)
    return Nesting(lead, started, helpers, [actor_id for actor_id in helpers if actor_id not in attached])


def actor_label(actor_id: str, actors: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """A helper's kind (subagent, teammate, ...) and label (its name or task, else its id)."""
    actor = actors.get(actor_id, {})
    return str(actor.get("type", "helper")), str(actor.get("label") or actor_id)
