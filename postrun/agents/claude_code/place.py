"""Where each transcript's steps go in the session: the main transcript's in file order, each
sub-agent's right after the ``Agent`` step that spawned it (its ``meta.json`` names the
``tool_use``), a sub-agent's own sub-agents likewise inside it. A sub-agent nothing links to
(no ``meta.json``, or a ``toolUseId`` no step has) goes after the main transcript's last
step, in the turn of its first line's prompt. Pure functions.

Each transcript's steps and the steps of what it spawned form one block of the order. A
transcript only grows, so while the links stay as they were (``Shape``), its new steps go
at the end of its block: ``extend`` places them there without walking the order again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from postrun.agents.claude_code.fold import ROOT_ACTOR, Fold

# One place: (actor, the entry's index in its transcript, turn id, segment, actor it spawned)
Slot = tuple[str, int, str, int, str | None]
Inherited = tuple[str, int]  # (turn id, segment) a sub-agent's steps take from where it goes


@dataclass(frozen=True, slots=True)
class Shape:
    """How the transcripts hang together: what spawned each sub-agent, and where the
    unlinked ones go. While it holds, a transcript's new steps go at the end of its block."""

    children: Mapping[tuple[str, int], tuple[str, ...]]  # (actor, index of the call) -> sub-agents it spawned
    orphans: tuple[tuple[str, Inherited], ...]  # unlinked sub-agents and where they go, in order
    parents: Mapping[str, str]  # sub-agent -> the actor whose call spawned it (root for the unlinked)


@dataclass(frozen=True, slots=True)
class Plan:
    order: list[Slot]
    ends: dict[str, int]  # each actor's block end: the position after its last step's subtree
    lengths: dict[str, int]  # each actor's entries when placed
    places: dict[str, Inherited]  # the (turn, segment) each sub-agent's steps take
    index: dict[tuple[str, int], int]  # (actor, entry index) -> its position


def spawn_links(subagents: Mapping[str, Fold], metas: Mapping[str, dict[str, Any] | None]) -> dict[str, str]:
    """Each linkable sub-agent's spawning ``tool_use`` id (its ``meta.json`` ``toolUseId``)."""
    links: dict[str, str] = {}
    for actor_id in subagents:
        meta = metas.get(actor_id)
        tool_id = meta.get("toolUseId") if meta is not None else None
        if isinstance(tool_id, str) and tool_id:
            links[actor_id] = tool_id
    return links


def shape(main: Fold, subagents: Mapping[str, Fold], metas: Mapping[str, dict[str, Any] | None]) -> Shape:
    """The links between the transcripts (a sub-agent's spawning call may be in another
    sub-agent's transcript); cycles and dangling links leave a sub-agent unlinked."""
    folds = {ROOT_ACTOR: main, **subagents}
    owner_of: dict[str, tuple[str, int]] = {}
    for actor_id, tool_id in sorted(spawn_links(subagents, metas).items()):
        owner = next((name for name, fold in folds.items() if name != actor_id and tool_id in fold.calls), None)
        if owner is not None:
            owner_of[actor_id] = (owner, folds[owner].calls[tool_id])  # the latest call of that id
    children: dict[tuple[str, int], list[str]] = {}
    parents: dict[str, str] = {}
    reached = {ROOT_ACTOR}
    _reach(ROOT_ACTOR, owner_of, reached, children, parents)
    orphans: list[tuple[str, Inherited]] = []
    turn_ids = ["turn:0", *(str(turn["id"]) for turn in main.turns)]
    for actor_id in sorted(subagents):
        if actor_id in reached:
            continue
        # Unlinked: after the main transcript, in the turn of its first prompt; what it spawned
        # (even in a cycle) goes inside it.
        turn = _turn_of_prompt(main, subagents[actor_id].facts.prompt_id)
        segment = int(main.turns[turn - 1]["segment_index"]) if turn > 0 else 0
        orphans.append((actor_id, (turn_ids[turn], segment)))
        parents[actor_id] = ROOT_ACTOR
        reached.add(actor_id)
        _reach(actor_id, owner_of, reached, children, parents)
    frozen = {key: tuple(names) for key, names in children.items()}
    return Shape(frozen, tuple(orphans), parents)


def _reach(
    start: str,
    owner_of: Mapping[str, tuple[str, int]],
    reached: set[str],
    children: dict[tuple[str, int], list[str]],
    parents: dict[str, str],
) -> None:
    """Every sub-agent spawned from ``start``, at any depth, parents before children."""
    spawned: dict[str, list[str]] = {}
    for actor_id in sorted(owner_of):
        spawned.setdefault(owner_of[actor_id][0], []).append(actor_id)
    frontier = [start]
    while frontier:
        current = frontier.pop()
        for actor_id in spawned.get(current, ()):
            if actor_id not in reached:
                reached.add(actor_id)
                owner, index = owner_of[actor_id]
                children.setdefault((owner, index), []).append(actor_id)
                parents[actor_id] = owner
                frontier.append(actor_id)


def plan(folds: Mapping[str, Fold], links: Shape) -> Plan:
    """Every entry of every transcript, in the session's order, with its turn and segment."""
    main = folds[ROOT_ACTOR]
    turn_ids = ["turn:0", *(str(turn["id"]) for turn in main.turns)]
    order: list[Slot] = []
    ends: dict[str, int] = {}
    places: dict[str, Inherited] = {}
    _walk(ROOT_ACTOR, None, folds, links, turn_ids, order, ends, places)
    for actor_id, inherited in links.orphans:
        places[actor_id] = inherited
        _walk(actor_id, inherited, folds, links, turn_ids, order, ends, places)
    index = {(slot[0], slot[1]): position for position, slot in enumerate(order)}
    return Plan(order, ends, {name: len(fold.entries) for name, fold in folds.items()}, places, index)


def _walk(
    start: str,
    inherited: Inherited | None,
    folds: Mapping[str, Fold],
    links: Shape,
    turn_ids: list[str],
    order: list[Slot],
    ends: dict[str, int],
    places: dict[str, Inherited],
) -> None:
    """One actor's block, depth first, without recursion (a hostile chain stays a loop)."""
    children = links.children
    stack: list[tuple[str, int, Inherited | None]] = [(start, 0, inherited)]
    while stack:
        actor_id, position, place = stack.pop()
        entries = folds[actor_id].entries
        while position < len(entries):
            entry = entries[position]
            turn_id, segment = place if place is not None else (turn_ids[entry.turn], entry.segment)
            spawned = children.get((actor_id, position))
            order.append((actor_id, position, turn_id, segment, spawned[0] if spawned else None))
            position += 1
            if spawned:
                stack.append((actor_id, position, place))
                for child in reversed(spawned):
                    places[child] = (turn_id, segment)
                    stack.append((child, 0, (turn_id, segment)))
                break
        else:
            ends[actor_id] = len(order)


def extend(last: Plan, folds: Mapping[str, Fold], links: Shape) -> tuple[Plan, int] | None:
    """``last`` with each transcript's new entries at the end of its block, and the first
    position that moved; None when that cannot be done (an actor without a block, or one
    whose block is empty: its end may be another's)."""
    main = folds[ROOT_ACTOR]
    turn_ids = ["turn:0", *(str(turn["id"]) for turn in main.turns)]
    depth = _depths(links)
    inserts: list[tuple[int, int, str]] = []
    if folds.keys() != last.lengths.keys():
        return None
    for actor_id, fold in folds.items():
        before = last.lengths.get(actor_id)
        if before is None or before == 0 or actor_id not in last.ends:
            return None
        if len(fold.entries) > before:
            inserts.append((last.ends[actor_id], -depth[actor_id], actor_id))
    if not inserts:
        return last, len(last.order)
    inserts.sort()
    order: list[Slot] = []
    added: dict[tuple[int, str], int] = {}
    previous = 0
    for position, _, actor_id in inserts:
        order.extend(last.order[previous:position])
        previous = position
        place = last.places.get(actor_id)
        entries = folds[actor_id].entries
        start = len(order)
        for number in range(last.lengths[actor_id], len(entries)):
            entry = entries[number]
            turn_id, segment = place if place is not None else (turn_ids[entry.turn], entry.segment)
            order.append((actor_id, number, turn_id, segment, None))
        added[(position, actor_id)] = len(order) - start
    order.extend(last.order[previous:])
    ends = {name: _moved_end(end, name, inserts, added, links) for name, end in last.ends.items()}
    lengths = {name: len(fold.entries) for name, fold in folds.items()}
    first = inserts[0][0]
    index = dict(last.index)
    for position in range(first, len(order)):
        slot = order[position]
        index[(slot[0], slot[1])] = position
    return Plan(order, ends, lengths, last.places, index), first


def _moved_end(
    end: int, actor_id: str, inserts: list[tuple[int, int, str]], added: Mapping[tuple[int, str], int], links: Shape
) -> int:
    """Where a block ends once the inserts are in: after everything inserted before it, and
    after what its own transcript and those inside it got at its end."""
    shift = 0
    for position, _, name in inserts:
        if position < end or (position == end and _within(name, actor_id, links)):
            shift += added[(position, name)]
    return end + shift


def _within(actor_id: str, ancestor: str, links: Shape) -> bool:
    current: str | None = actor_id
    seen = 0
    while current is not None and seen <= len(links.parents) + 1:
        if current == ancestor:
            return True
        current = links.parents.get(current)
        seen += 1
    return False


def _depths(links: Shape) -> dict[str, int]:
    depths = {ROOT_ACTOR: 0}
    for actor_id in links.parents:
        depth, current = 0, actor_id
        while current != ROOT_ACTOR and depth <= len(links.parents):
            current = links.parents.get(current, ROOT_ACTOR)
            depth += 1
        depths[actor_id] = depth
    return depths


def _turn_of_prompt(main: Fold, prompt_id: str | None) -> int:
    """The turn opened by the prompt ``prompt_id``, else the last one (0 when none opened)."""
    if prompt_id is not None:
        for turn in main.turns:
            if turn.get("prompt_id") == prompt_id:
                return int(turn["index"])
    return len(main.turns)
