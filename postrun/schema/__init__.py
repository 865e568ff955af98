"""The Postrun event schema, version 1.2: records validated by their models
(``postrun.schema.models``), through plain checks first (``postrun.schema.plain``), and the
references between the records of a session.

Failures are reported as ``<field path>: <message>``, for example
``steps[3].payload.exit_code: required``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from postrun.schema.base import SCHEMA_VERSION, SchemaError, check_timestamp
from postrun.schema.consistent import ConsistentSteps
from postrun.schema.plain import PLAIN_FIELDS, is_timestamp, plainly_valid, plainly_valid_step

__all__ = [
    "PLAIN_FIELDS",
    "SCHEMA_VERSION",
    "ConsistentSteps",
    "SchemaError",
    "check_timestamp",
    "checked_references",
    "envelope_problems",
    "is_timestamp",
    "model_problems",
    "plainly_valid",
    "plainly_valid_step",
    "record_problems",
    "reference_problems",
    "validate_envelope",
    "validate_record",
]


def model_problems(kind: str, data: Any, path: str | None = None) -> list[str]:
    """``record_problems`` as the models alone find them (built the first time they are asked)."""
    from postrun.schema import models

    return models.model_problems(kind, data, path)


def record_problems(kind: str, data: Any, path: str | None = None) -> list[str]:
    """Return the schema problems of one record of ``kind`` (empty when valid)."""
    if plainly_valid(kind, data):
        return []
    return model_problems(kind, data, path)


def validate_record(kind: str, data: Any, path: str | None = None) -> None:
    """Raise SchemaError when one record of ``kind`` breaks the schema."""
    problems = record_problems(kind, data, path)
    if problems:
        raise SchemaError(problems)


def reference_problems(
    session: Mapping[str, Any],
    segments: Sequence[Mapping[str, Any]],
    actors: Sequence[Mapping[str, Any]],
    turns: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
) -> list[str]:
    """Check the references between already shape-valid records of one session."""
    return checked_references(session, segments, actors, turns, steps)[0]


def checked_references(
    session: Mapping[str, Any],
    segments: Sequence[Mapping[str, Any]],
    actors: Sequence[Mapping[str, Any]],
    turns: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
    known: ConsistentSteps | None = None,
) -> tuple[list[str], ConsistentSteps | None]:
    """``reference_problems``, and the steps' references when they have none; ``known``: those of
    an earlier check of the session, whose steps then need no checking again."""
    problems: list[str] = []
    session_id = session["id"]
    segment_indexes: set[int] = set()
    for i, segment in enumerate(segments):
        if segment["index"] in segment_indexes:
            problems.append(f"segments[{i}].index: duplicate {segment['index']}")
        segment_indexes.add(segment["index"])
    actor_ids = {actor["id"] for actor in actors}
    if len(actor_ids) != len(actors):
        problems.append("actors: duplicate id")
    for i, actor in enumerate(actors):
        if "parent_id" in actor and actor["parent_id"] not in actor_ids:
            problems.append(f"actors[{i}].parent_id: names no actor of the session")
    turn_ids = _turn_ids(turns, session_id, segment_indexes, actor_ids, problems)
    consistent = None if known is None else known.extended(steps, session_id, turn_ids, actor_ids, segment_indexes)
    if consistent is None:
        consistent = ConsistentSteps.found(steps, session_id, turn_ids, actor_ids, segment_indexes)
    if consistent is not None:
        return problems, consistent
    seqs: set[int] = set()
    step_ids: set[str] = set()
    for i, step in enumerate(steps):
        if step["session_id"] != session_id:
            problems.append(f"steps[{i}].session_id: differs from session.id")
        if step["turn_id"] not in turn_ids:
            problems.append(f"steps[{i}].turn_id: names no turn of the session")
        if step["actor_id"] not in actor_ids:
            problems.append(f"steps[{i}].actor_id: names no actor of the session")
        if step["segment_index"] not in segment_indexes:
            problems.append(f"steps[{i}].segment_index: names no segment of the session")
        if step["seq"] in seqs:
            problems.append(f"steps[{i}].seq: duplicate {step['seq']}")
        seqs.add(step["seq"])
        if step["id"] in step_ids:
            problems.append(f"steps[{i}].id: duplicate {step['id']}")
        step_ids.add(step["id"])
    return problems, None


def _turn_ids(
    turns: Sequence[Mapping[str, Any]],
    session_id: Any,
    segment_indexes: set[int],
    actor_ids: set[Any],
    problems: list[str],
) -> set[str]:
    """The turns' ids, their reference problems added to ``problems``. Checked as sets first
    (at C speed: a long session has thousands of turns), one by one only to name a problem."""
    ids = list(map(_ID, turns))
    turn_ids = set(ids)
    if (
        len(turn_ids) == len(ids)
        and set(map(_SESSION_ID, turns)) <= {session_id}
        and set(map(_SEGMENT_INDEX, turns)) <= segment_indexes
        and set(map(_ACTOR_ID, turns)) <= actor_ids
    ):
        return turn_ids
    turn_ids = set()
    for i, turn in enumerate(turns):
        if turn["session_id"] != session_id:
            problems.append(f"turns[{i}].session_id: differs from session.id")
        if turn["segment_index"] not in segment_indexes:
            problems.append(f"turns[{i}].segment_index: names no segment of the session")
        if turn["actor_id"] not in actor_ids:
            problems.append(f"turns[{i}].actor_id: names no actor of the session")
        if turn["id"] in turn_ids:
            problems.append(f"turns[{i}].id: duplicate {turn['id']}")
        turn_ids.add(turn["id"])
    return turn_ids


_ID = operator.itemgetter("id")
_SESSION_ID = operator.itemgetter("session_id")
_SEGMENT_INDEX = operator.itemgetter("segment_index")
_ACTOR_ID = operator.itemgetter("actor_id")

_ENVELOPE_KEYS = ("schema_version", "session", "segments", "actors", "turns", "steps")


def envelope_problems(envelope: Any) -> list[str]:
    """Every problem of a whole export envelope: shapes first, then references."""
    if not isinstance(envelope, Mapping):
        return ["envelope: expected an object"]
    problems = [f"{key}: unknown field" for key in envelope if key not in _ENVELOPE_KEYS]
    problems += [f"{key}: required" for key in _ENVELOPE_KEYS if key not in envelope]
    if problems:
        return problems
    if envelope["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version: expected '{SCHEMA_VERSION}'")
    problems += record_problems("session", envelope["session"])
    for kind, key in (("segment", "segments"), ("actor", "actors"), ("turn", "turns"), ("step", "steps")):
        records = envelope[key]
        if not isinstance(records, list):
            problems.append(f"{key}: expected a list")
            continue
        for i, record in enumerate(records):
            problems += record_problems(kind, record, f"{key}[{i}]")
    if problems:
        return problems
    return reference_problems(
        envelope["session"], envelope["segments"], envelope["actors"], envelope["turns"], envelope["steps"]
    )


def validate_envelope(envelope: Any) -> None:
    """Raise SchemaError when an export envelope breaks the schema."""
    problems = envelope_problems(envelope)
    if problems:
        raise SchemaError(problems)
