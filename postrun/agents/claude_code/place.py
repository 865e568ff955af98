"""Where each transcript's steps go in the session: the main transcript's in file order, each
sub-agent's right after the ``Agent`` step that spawned it (its ``meta.json`` names the
``tool_use``), a sub-agent's own sub-agents likewise inside it. A sub-agent nothing links to
(no ``meta.json``, or a ``toolUseId`` no step has) goes after the main transcript's last
step, in the turn of its first line's prompt. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from postrun.agents.claude_code.fold import ROOT_ACTOR, Entry, Fold
from postrun.agents.claude_code.results import Call


@dataclass(frozen=True, slots=True)
class Placed:
    """One entry at its place: its transcript, its position there, and where it goes."""

    actor_id: str
    index: int
    entry: Entry
    turn_id: str
    segment: int
    spawned: str | None  # the sub-agent this call started, when one is linked to it


@dataclass(frozen=True, slots=True)
class Plan:
    order: list[Placed]
    parents: dict[str, str]  # sub-agent actor id -> the actor whose call spawned it (root for the unlinked)


def spawn_links(subagents: Mapping[str, Fold], metas: Mapping[str, dict[str, Any] | None]) -> dict[str, str]:
    """Each linkable sub-agent's spawning ``tool_use`` id (its ``meta.json`` ``toolUseId``)."""
    links: dict[str, str] = {}
    for actor_id in subagents:
        meta = metas.get(actor_id)
        tool_id = meta.get("toolUseId") if meta is not None else None
        if isinstance(tool_id, str) and tool_id:
            links[actor_id] = tool_id
    return links


def plan(main: Fold, subagents: Mapping[str, Fold], metas: Mapping[str, dict[str, Any] | None]) -> Plan:
    """Every entry of every transcript, in the session's order, with its turn and segment."""
    owners: dict[tuple[str, str], list[str]] = {}
    folds = {ROOT_ACTOR: main, **subagents}
    for actor_id, tool_id in sorted(spawn_links(subagents, metas).items()):
        owner = next(
            (name for name, fold in folds.items() if name != actor_id and tool_id in fold.calls),
            None,
        )
        if owner is not None:
            owners.setdefault((owner, tool_id), []).append(actor_id)
    turn_ids = ["turn:0", *(str(turn["id"]) for turn in main.turns)]
    order: list[Placed] = []
    parents: dict[str, str] = {}
    visited = {ROOT_ACTOR}
    stack: list[tuple[str, Iterator[tuple[int, Entry]], tuple[str, int] | None]] = [
        (ROOT_ACTOR, iter(enumerate(main.entries)), None)
    ]
    _walk(stack, folds, owners, turn_ids, order, parents, visited)
    # The sub-agents nothing reachable links to, each in the turn of its first prompt.
    for actor_id in sorted(subagents):
        if actor_id in visited:
            continue
        visited.add(actor_id)
        parents[actor_id] = ROOT_ACTOR
        fold = subagents[actor_id]
        turn = _turn_of_prompt(main, fold.prompt_id)
        segment = int(main.turns[turn - 1]["segment_index"]) if turn > 0 else 0
        stack.append((actor_id, iter(enumerate(fold.entries)), (turn_ids[turn], segment)))
        _walk(stack, folds, owners, turn_ids, order, parents, visited)
    return Plan(order, parents)


def _walk(
    stack: list[tuple[str, Iterator[tuple[int, Entry]], tuple[str, int] | None]],
    folds: Mapping[str, Fold],
    owners: Mapping[tuple[str, str], list[str]],
    turn_ids: list[str],
    order: list[Placed],
    parents: dict[str, str],
    visited: set[str],
) -> None:
    """Depth first, without recursion (a hostile chain of sub-agents stays a loop)."""
    while stack:
        actor_id, entries, inherited = stack[-1]
        found = next(entries, None)
        if found is None:
            stack.pop()
            continue
        index, entry = found
        turn_id, segment = inherited if inherited is not None else (turn_ids[entry.turn], entry.segment)
        children: list[str] = []
        body = entry.body
        if isinstance(body, Call):
            children = [child for child in owners.get((actor_id, body.tool_id), ()) if child not in visited]
        order.append(Placed(actor_id, index, entry, turn_id, segment, children[0] if children else None))
        for child in reversed(children):
            visited.add(child)
            parents[child] = actor_id
            stack.append((child, iter(enumerate(folds[child].entries)), (turn_id, segment)))


def _turn_of_prompt(main: Fold, prompt_id: str | None) -> int:
    """The turn opened by the prompt ``prompt_id``, else the last one (0 when none opened)."""
    if prompt_id is not None:
        for turn in main.turns:
            if turn.get("prompt_id") == prompt_id:
                return int(turn["index"])
    return len(main.turns)
