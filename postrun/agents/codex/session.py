"""The session-wide records of a Codex session: session, segments, actors, turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from postrun.agents.codex.entries import NO_TURN, ROOT_ACTOR, Task
from postrun.agents.codex.thread import ThreadFold
from postrun.agents.codex.usage import session_metrics
from postrun.records import SessionExtras, StepRow

AGENT = "codex"


def ended_at(root: ThreadFold) -> str | None:
    """The last turn end, once no turn of the root is open (a resume closes a killed run's)."""
    return None if root.open or not root.tasks else root.ended_at


def session_record(root: ThreadFold, source: str, children: Sequence[ThreadFold]) -> dict[str, Any]:
    meta = root.meta
    assert meta is not None
    workspace: dict[str, Any] = {"root": meta.cwd}
    if meta.repo is not None:
        workspace["repo"] = meta.repo
    session: dict[str, Any] = {
        "id": meta.thread_id,
        "agent": {"kind": AGENT, "version": meta.cli_version or "unknown"},
        "workspace": workspace,
        "started_at": started_at(root),
        "source": source,
    }
    end = ended_at(root)
    if end is not None:
        session["ended_at"] = end
    metrics = session_metrics([(_thread_id(thread), thread.usage) for thread in (root, *children)])
    if metrics is not None:
        session["metrics"] = metrics
    return session


def _thread_id(thread: ThreadFold) -> str:
    return thread.meta.thread_id if thread.meta is not None else thread.facts.actor_id


def started_at(root: ThreadFold) -> str:
    assert root.meta is not None
    return root.meta.started_at or root.last_at or "1970-01-01T00:00:00.000Z"


def extras(root: ThreadFold) -> SessionExtras:
    assert root.meta is not None
    return SessionExtras(model=root.model, provider=root.meta.provider, git_branch=root.meta.branch)


def segment_records(root: ThreadFold, files: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """Segment 0 from the start, one more per resume; ``files``: (path, segment it joins)."""
    starts = [started_at(root), *root.resumes]
    end = ended_at(root)
    segments: list[dict[str, Any]] = []
    for index, start in enumerate(starts):
        segment: dict[str, Any] = {
            "index": index,
            "start_reason": "start" if index == 0 else "resume",
            "started_at": start,
            "source_files": [path for path, joins in files if joins in (index, -1)],
        }
        last = index == len(starts) - 1
        if not last:
            segment["ended_at"] = starts[index + 1]
        elif end is not None:
            segment["ended_at"] = end
        segments.append(segment)
    return segments


def actor_records(root: ThreadFold, children: Sequence[ThreadFold]) -> list[dict[str, Any]]:
    ids = {child.facts.actor_id for child in children}
    actors: list[dict[str, Any]] = []
    for child in children:
        assert child.meta is not None
        parent = child.meta.parent_thread_id
        parent_id = parent if parent in ids and parent != child.facts.actor_id else ROOT_ACTOR
        actors.append(
            {"id": child.facts.actor_id, "type": "subagent", "parent_id": parent_id, "label": child.meta.label}
        )
    actors.sort(key=lambda actor: str(actor["id"]))
    return [{"id": ROOT_ACTOR, "type": "root", "label": AGENT}, *actors]


class MadeTurn(NamedTuple):
    """A turn's record as a mapping made it, with what it was made of."""

    task: Task | None  # None for ``turn:0``
    steps: list[str]  # its steps' ids: a list never changed once made, so identity means the same ids
    number: int  # the turn record's index
    record: dict[str, Any]


def turn_records(
    root: ThreadFold,
    rows: Sequence[StepRow],
    step_ids: Mapping[str, list[str]],
    made: Mapping[str, MadeTurn] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, MadeTurn]]:
    """The root's prompted turns, numbered from 1, and ``turn:0`` when steps came before any;
    ``step_ids``: each turn's steps in ``seq`` order. ``made``: the last mapping's turns, each
    given back as the very same record when made of the same parts (a live session's
    re-ingest changes its last turn, and the store and the checks pass over the others by
    identity); the second value is this mapping's, for the next."""
    session_id = root.facts.session_id
    last = made or {}
    now: dict[str, MadeTurn] = {}
    if NO_TURN in step_ids:
        steps = step_ids[NO_TURN]
        before = last.get(NO_TURN)
        if before is not None and before.steps is steps:
            now[NO_TURN] = before
        else:
            first = next(row.record for row in rows if row.record["turn_id"] == NO_TURN)
            record = _turn(NO_TURN, session_id, first["segment_index"], 0, first["at"], list(steps))
            now[NO_TURN] = MadeTurn(None, steps, 0, record)
    index = 0
    empty: list[str] = []
    for task in root.tasks.values():
        if task.prompt is None:
            continue
        index += 1
        steps = step_ids.get(task.turn_id, empty)
        before = last.get(task.turn_id)
        if before is not None and before.task is task and before.steps is steps and before.number == index:
            now[task.turn_id] = before
            continue
        turn = _turn(task.turn_id, session_id, task.segment, index, task.at, list(steps))
        turn["prompt_id"] = task.prompt
        if task.mode is not None:
            turn["mode"] = task.mode
        now[task.turn_id] = MadeTurn(task, steps, index, turn)
    return [made_turn.record for made_turn in now.values()], now


def _turn(turn_id: str, session_id: str, segment: int, index: int, at: str, steps: list[str]) -> dict[str, Any]:
    return {
        "id": turn_id,
        "session_id": session_id,
        "segment_index": segment,
        "actor_id": ROOT_ACTOR,
        "index": index,
        "started_at": at,
        "step_ids": steps,
    }
