"""Where each thread's steps go in the session, and their ``seq``.

The root's steps in the order of their first lines; a sub-agent's right after the
``spawn_agent`` step that started it (its own sub-agents after its spawn steps, and so on);
the guardian's k-th review after the k-th call that asked to leave the sandbox under a
policy that asks. A child no step names goes after its parent's steps.

``seq`` is the place in that order. Rows (validated, serialized) are made only from the
first record that is not where the last placing had it: a thread that grew by one line
costs the rows of its new steps (and of the few that moved behind them), not the session's.
The order itself goes on from the last one while only the root's latest entries changed.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

from postrun.agents.codex.thread import ThreadFold
from postrun.prefix import same_prefix
from postrun.records import StepRow

_MAX_DEPTH = 64  # sub-agents nested deeper than this are placed after their session's steps


@dataclass(frozen=True, slots=True)
class Placing:
    """The last placing: the records in session order, the rows made of them, and each
    turn's step ids in that order."""

    sources: tuple[dict[str, Any], ...] = ()
    rows: tuple[StepRow, ...] = ()
    by_turn: Mapping[str, list[str]] = field(default_factory=dict)  # never changed once made


@dataclass(frozen=True, slots=True)
class Order:
    """A session order and what it was made of, for the next one to go on from: the children
    and the root's records (each entry's), spawns and escalations as they were; where the
    root's last run of entries that started nothing begins (``split``: how many entries come
    before it; ``tail``: its place in ``records``); and whether anything came after it."""

    records: tuple[dict[str, Any], ...]
    children: tuple[ThreadFold, ...]
    root_records: list[tuple[dict[str, Any], ...]]
    spawns: Mapping[str, str]
    escalations: Sequence[str]
    split: int
    tail: int
    closed: bool  # nothing after the root's own records (no child no step names, no review left)


def session_order(root: ThreadFold, children: Sequence[ThreadFold], last: Order | None = None) -> Order:
    """Every step record of the session, in the session's order. ``last``: the order before;
    when only the root's entries after the last one that started a child or got a review
    changed, and nothing came after the root's own entries (a live session's common case:
    ``_goes_on``), the order up to them is taken from it, not made again."""
    entries = list(root.records.values())
    if last is not None and _goes_on(root, children, last):
        changed = same_prefix(entries, last.root_records)
        if changed >= last.split:
            kept = last.tail + sum(map(len, last.root_records[last.split : changed]))
            records = (*last.records[:kept], *chain.from_iterable(entries[changed:]))
            return replace(last, records=records, root_records=entries)
    by_id = {child.facts.actor_id: child for child in children}
    kids: dict[str, list[ThreadFold]] = {}
    for child in children:
        assert child.meta is not None
        parent = child.meta.parent_thread_id
        if parent not in by_id or parent == child.facts.actor_id:
            parent = root.facts.actor_id
        kids.setdefault(parent, []).append(child)
    out: list[dict[str, Any]] = []
    done: set[str] = set()
    split, tail, end = _emit(root, kids, out, done, 0)
    for child in children:
        if child.facts.actor_id not in done:  # a loop of parents: none of them reached from the root
            _emit(child, kids, out, done, _MAX_DEPTH)
    closed = end == len(out)
    return Order(tuple(out), tuple(children), entries, root.spawns, list(root.escalations), split, tail, closed)


def _goes_on(root: ThreadFold, children: Sequence[ThreadFold], last: Order) -> bool:
    """Nothing came after the root's entries last time, the children are the very same folds,
    and the root started the same children and asked for the same reviews."""
    return (
        last.closed
        and len(children) == len(last.children)
        and all(map(operator.is_, children, last.children))
        and root.spawns == last.spawns
        and root.escalations == last.escalations
    )


def _emit(
    thread: ThreadFold, kids: Mapping[str, list[ThreadFold]], out: list[dict[str, Any]], done: set[str], depth: int
) -> tuple[int, int, int]:
    """Add the thread's records and its children's to ``out``; (how many of its entries come
    before its last run of entries that started nothing, where that run begins in ``out``,
    where its own entries' part ends)."""
    done.add(thread.facts.actor_id)
    mine = [kid for kid in kids.get(thread.facts.actor_id, ()) if kid.facts.actor_id not in done]
    if not mine or depth >= _MAX_DEPTH:
        tail = len(out)
        out.extend(chain.from_iterable(thread.records.values()))
        return 0, tail, len(out)
    spawned = {kid.facts.actor_id: kid for kid in mine if not _guardian(kid)}
    reviews = [review for kid in mine if _guardian(kid) for review in _reviews(kid)]
    review_after = {key: k for k, key in enumerate(thread.escalations[: len(reviews)])}
    split, tail = 0, len(out)
    for at, (key, records) in enumerate(thread.records.items(), start=1):
        out.extend(records)
        started = thread.spawns.get(key)
        if started is not None and started in spawned and started not in done:
            _emit(spawned[started], kids, out, done, depth + 1)
            split, tail = at, len(out)
        k = review_after.get(key)
        if k is not None:
            out.extend(reviews[k])
            split, tail = at, len(out)
    end = len(out)
    for kid in mine:
        if not _guardian(kid) and kid.facts.actor_id not in done:
            _emit(kid, kids, out, done, depth + 1)
    for review in reviews[len(review_after) :]:
        out.extend(review)
    for kid in mine:
        done.add(kid.facts.actor_id)
    return split, tail, end


def _guardian(thread: ThreadFold) -> bool:
    return thread.meta is not None and thread.meta.guardian


def _reviews(guardian: ThreadFold) -> list[list[dict[str, Any]]]:
    """The guardian's records, one list per review (its turns, in order)."""
    by_turn: dict[str | None, list[dict[str, Any]]] = {}
    for key, entry in guardian.entries.items():
        by_turn.setdefault(entry.group, []).extend(guardian.records[key])
    return [records for records in by_turn.values() if records]


def placed_rows(sources: Sequence[dict[str, Any]], previous: Placing | None) -> Placing:
    """Rows of ``sources`` with ``seq`` their position, reusing the last placing's where it had them."""
    last = previous or Placing()
    start = same_prefix(sources, last.sources)
    # A record that moved keeps its row, renumbered (no second validation).
    moved = {id(source): row for source, row in zip(last.sources[start:], last.rows[start:], strict=True)}
    rows = list(last.rows[:start])
    by_turn = dict(last.by_turn)
    copied: set[str] = set()
    for row in reversed(last.rows[start:]):
        _turn_ids(by_turn, copied, row.record["turn_id"]).pop()
    for seq in range(start, len(sources)):
        source = sources[seq]
        kept = moved.get(id(source))
        row = kept.with_fields(seq=seq) if kept is not None else StepRow.build({**source, "seq": seq})
        rows.append(row)
        _turn_ids(by_turn, copied, row.record["turn_id"]).append(row.id)
    return Placing(tuple(sources), tuple(rows), {turn: ids for turn, ids in by_turn.items() if ids})


def _turn_ids(by_turn: dict[str, list[str]], copied: set[str], turn_id: str) -> list[str]:
    """The turn's step ids, copied once before they change (the last placing keeps its own)."""
    if turn_id not in copied:
        by_turn[turn_id] = list(by_turn.get(turn_id, ()))
        copied.add(turn_id)
    return by_turn[turn_id]
