"""A Codex session's rollouts as v1.2 records: pure, and a fold that resumes.

Each rollout (the root thread's, each sub-agent's and the guardian's) is folded line by
line into a ``ThreadFold``. ``MappingCache`` keeps every thread's fold and the last placing
of the session's steps: given only the bytes a rollout grew by, ``map_session`` folds just
those lines, remakes the records of the entries they name and the rows of the steps that
are new or moved. With or without a cache the result is the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from postrun.agents.codex.entries import ROOT_ACTOR, UNPLACED, Facts, Place
from postrun.agents.codex.files import RolloutData, SessionFiles
from postrun.agents.codex.kept import kept_thread
from postrun.agents.codex.lines import rollout_lines
from postrun.agents.codex.locate import rollout_at
from postrun.agents.codex.meta import NOT_A_ROLLOUT
from postrun.agents.codex.placing import Order, Placing, placed_rows, session_order
from postrun.agents.codex.session import (
    AGENT,
    MadeTurn,
    actor_records,
    extras,
    segment_records,
    session_record,
    turn_records,
)
from postrun.agents.codex.thread import Placer, ThreadFold
from postrun.appendonly import Mark
from postrun.errors import NotParseableYet, SourceError
from postrun.records import MappedSession, SourceFile, StoredActor

_PARENT_HOPS = 64
_NOTHING_KEPT: Mapping[str, StoredActor] = {}


@dataclass(frozen=True, slots=True)
class MappingCache:
    """What the next ``map_session`` of the same session may reuse: each thread's fold (by
    thread id: a rollout compressed or archived is the same thread) and the last placing.
    Valid in the process that made it; keep it in memory next to the session."""

    threads: Mapping[str, ThreadFold] = field(default_factory=dict)
    placing: Placing | None = None
    seen: Mapping[str, SourceFile] = field(default_factory=dict)  # each fold's rollout as it was read
    turns: Mapping[str, MadeTurn] = field(default_factory=dict)  # the turn records last made
    order: Order | None = None

    def mark_of(self, thread_id: str) -> Mark | None:
        """Where a read of the thread's rollout may start: where its fold stopped."""
        fold = self.threads.get(thread_id)
        return fold.mark if fold is not None else None


def map_session(
    files: SessionFiles, previous: MappingCache | None = None, kept: Mapping[str, StoredActor] = _NOTHING_KEPT
) -> tuple[MappedSession, MappingCache]:
    """Map a session's rollouts to v1.2 records.

    A rollout's ``data`` starts at ``start``: 0 (the whole file) or where the cached fold of
    its thread stopped. Raises ``NotParseableYet`` (kind ``rollout``) while the root
    rollout's first line is not written, ``SourceError`` when it is not a root thread's
    rollout; a child rollout that cannot be used is listed in ``MappedSession.unread``, and
    what the store holds of it (``kept``, by thread id) stays as it is.
    """
    cached = previous.threads if previous is not None else {}
    session_id = files.root.rollout.thread_id
    incomplete: list[str] = []
    root = _advanced(files.root, cached, Facts(session_id, ROOT_ACTOR, ""), _root_place, incomplete)
    _check_root(root, files.root)
    threads: dict[str, ThreadFold] = {session_id: root}
    unread: list[SourceError] = list(files.unread)
    children: list[ThreadFold] = []
    placer = _ChildPlacer(root, threads)
    for data in files.children:
        thread_id = data.rollout.thread_id
        fold = _advanced(data, cached, Facts(session_id, thread_id, f"{thread_id}/"), placer, incomplete)
        threads[thread_id] = fold
        problem = _child_problem(fold, data, session_id)
        if problem is not None:
            unread.append(problem)
        elif fold.meta is not None:
            children.append(fold)
    children = [_refreshed(child, placer, threads) for child in children]
    for child in children:
        threads[child.facts.actor_id] = child
    unused = {rollout.thread_id for problem in unread if (rollout := rollout_at(Path(problem.where))) is not None}
    children.extend(kept_thread(kept[thread_id], session_id) for thread_id in sorted(unused) if thread_id in kept)
    order = session_order(root, children, previous.order if previous is not None else None)
    placing = placed_rows(order.records, previous.placing if previous is not None else None)
    rows = list(placing.rows)
    turns, made = turn_records(root, rows, placing.by_turn, previous.turns if previous is not None else None)
    placed = {child.facts.actor_id for child in children}
    used = [files.root, *(data for data in files.children if data.rollout.thread_id in placed)]
    paths = [(str(files.root.rollout.path), -1)]
    paths.extend((str(data.rollout.path), _joins(threads, data.rollout.thread_id)) for data in used[1:])
    mapped = MappedSession(
        agent=AGENT,
        session=session_record(root, str(files.root.rollout.path), children),
        segments=segment_records(root, paths),
        actors=actor_records(root, children),
        turns=turns,
        steps=rows,
        extras=extras(root),
        # A rollout not used this time is read again at the next start-up.
        source_files=tuple(data.read.fingerprint for data in used),
        helper_metrics={
            child.facts.actor_id: metrics for child in children if (metrics := child.usage.metrics()) is not None
        },
        unread=tuple(unread),
        incomplete=tuple(incomplete),
    )
    seen = {data.rollout.thread_id: data.read.fingerprint for data in (files.root, *files.children)}
    return mapped, MappingCache(threads, placing, seen, made, order)


def _advanced(
    data: RolloutData, cached: Mapping[str, ThreadFold], facts: Facts, placer: Placer, incomplete: list[str]
) -> ThreadFold:
    read = data.read
    last = cached.get(data.rollout.thread_id)
    if read.start == 0:
        state = ThreadFold()
    elif last is not None and last.mark is not None and last.mark.end == read.start:
        state = last
    else:
        raise SourceError(str(data.rollout.path), f"read from byte {read.start}, where no earlier read stopped")
    parsed = rollout_lines(read.new, read.start, state.count)
    if parsed.incomplete:
        incomplete.append(str(data.rollout.path))
    mark = read.mark(parsed.end)
    if not parsed.count and state.facts == facts and state.mark == mark:
        return state
    return state.advanced(parsed.lines, parsed.count, mark, facts, placer)


def _root_place(thread: ThreadFold, group: str | None) -> Place:
    return thread.own_place(group)


def _check_root(root: ThreadFold, data: RolloutData) -> None:
    where = str(data.rollout.path)
    if root.meta is None:
        if root.count == 0:
            raise NotParseableYet(where, "rollout", "its first line is not complete yet")
        raise SourceError(where, NOT_A_ROLLOUT)
    if root.meta.thread_id != data.rollout.thread_id:
        raise SourceError(where, f"session_meta names thread {root.meta.thread_id}, the file name another")
    if root.meta.is_child:
        raise SourceError(where, f"a child thread of {root.meta.parent_thread_id}, not a session")


def _child_problem(fold: ThreadFold, data: RolloutData, session_id: str) -> SourceError | None:
    where = str(data.rollout.path)
    if fold.meta is None:
        return SourceError(where, NOT_A_ROLLOUT) if fold.count else None
    if fold.meta.thread_id != data.rollout.thread_id:
        return SourceError(where, f"session_meta names thread {fold.meta.thread_id}, the file name another")
    if not fold.meta.is_child:
        return SourceError(where, f"not a child thread of session {session_id}")
    return None


class _ChildPlacer:
    """Where a child's turn is: in the root turn it ran for (``root_turn_id``), else its
    parent's turn (``parent_turn_id``), else with the step that started it."""

    def __init__(self, root: ThreadFold, threads: Mapping[str, ThreadFold]) -> None:
        self.root = root
        self.threads = threads

    def __call__(self, thread: ThreadFold, group: str | None) -> Place:
        for _ in range(_PARENT_HOPS):
            task = thread.tasks.get(group) if group is not None else None
            if task is not None and task.root_turn is not None and task.root_turn in self.root.tasks:
                return self.root.own_place(task.root_turn)
            assert thread.meta is not None
            parent = self.threads.get(thread.meta.parent_thread_id or "")
            if parent is None or parent is thread:
                break
            if task is not None and task.parent_turn is not None and task.parent_turn in parent.tasks:
                if parent is self.root:
                    return self.root.own_place(task.parent_turn)
                thread, group = parent, task.parent_turn
                continue
            return _starting_place(parent, thread, group)
        return UNPLACED


def _starting_place(parent: ThreadFold, child: ThreadFold, group: str | None) -> Place:
    """The place of the parent's step that started the child: its ``spawn_agent`` call, or
    for the guardian the call its review (of this turn) is about."""
    assert child.meta is not None
    key: str | None = None
    if child.meta.guardian and group in child.tasks:
        review = list(child.tasks).index(group)
        key = parent.escalations[review] if review < len(parent.escalations) else None
    else:
        key = next((key for key, started in parent.spawns.items() if started == child.facts.actor_id), None)
    records = parent.records.get(key) if key is not None else None
    if not records:
        return UNPLACED
    return Place(records[0]["turn_id"], records[0]["segment_index"])


def _refreshed(child: ThreadFold, placer: _ChildPlacer, threads: Mapping[str, ThreadFold]) -> ThreadFold:
    """The child with every turn where the session's threads now put it, and its calls
    without a result failed once the root turn they ran for is over (copied when it changes)."""
    moves = {group: target for group, place in child.places.items() if (target := placer(child, group)) != place}
    root = placer.root
    closed = frozenset(
        group
        for group, task in child.tasks.items()
        if task.root_turn is not None and task.root_turn in root.tasks and root.tasks[task.root_turn].ended
    )
    if not moves and closed == child.closed:
        return child
    state = child.copy()
    with state.placing(placer):
        for group, target in moves.items():
            task = state.tasks.get(group) if group is not None else None
            state.repatch(group, target, since=task.line if task is not None else 0)
        state.close(closed)
    return state


def _joins(threads: Mapping[str, ThreadFold], thread_id: str) -> int:
    """The segment a child's rollout joins: that of its first step."""
    fold = threads[thread_id]
    for records in fold.records.values():
        if records:
            return int(records[0]["segment_index"])
    return 0
