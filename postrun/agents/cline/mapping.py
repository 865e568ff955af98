"""A Cline session's files as v1.2 records: pure, and incremental.

The mapping is a left-to-right fold over the messages (``fold``). A message's steps are a
function of the message, the result blocks its calls were answered with, a small
``Context`` (seq, turn, time, ids) and a few session-wide facts (``SessionFacts``).
``MappingCache`` keeps each message's steps under exactly those inputs (message
fingerprints, not the document), so re-mapping a session Cline rewrote with one
more message builds and validates only the steps that changed. It also keeps where
the last fold ended: when Cline only appended messages, the fold starts again at the
first message whose inputs changed (a new one, or an earlier call that got its result)
instead of walking every message. With or without a cache the result is the same.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from postrun.agents.cline.compaction import summary_step
from postrun.agents.cline.files import SessionFiles, SideFile
from postrun.agents.cline.fold import CacheKey, Folded, FoldResume, fold_messages
from postrun.agents.cline.helpers import Helper, helper_actor, place_helpers
from postrun.agents.cline.segments import SegmentPlan, plan_segments
from postrun.agents.cline.steps import ROOT_ACTOR, MessageSteps, SessionFacts
from postrun.agents.cline.times import valid_timestamp
from postrun.agents.cline.tools import ToolContext
from postrun.agents.cline.transcript import Transcript, TranscriptResume, read_transcript
from postrun.errors import SourceError
from postrun.records import (
    MappedSession,
    SessionExtras,
    SourceFile,
    StepRow,
    StoredActor,
    canonical_json,
    digest,
    summed_metrics,
)
from postrun.timestamps import iso_from_ms, iso_from_ns

AGENT = "cline"


@dataclass(frozen=True, slots=True)
class MappingCache:
    """What the next ``map_session`` of the same session may reuse.

    Valid in the process that made it only (fingerprints use Python's keyed hash);
    keep it in memory next to the session, never store it.
    """

    header: str  # digest of the session-wide facts every step depends on
    messages: Mapping[CacheKey, MessageSteps] = field(default_factory=dict)
    transcript: TranscriptResume | None = None
    fold: FoldResume | None = None
    helpers: Mapping[str, MappingCache] = field(default_factory=dict)  # by actor id
    turn_steps: TurnSteps | None = None  # the lead's (helpers' caches keep none)


@dataclass(frozen=True, slots=True)
class TurnSteps:
    """The step ids of each turn, as the rows of the last mapping name them, and the turn
    records made of them."""

    rows: tuple[StepRow, ...]
    step_ids: Mapping[str, tuple[str, ...]]
    # turn id -> (what its record was made of: the opened turn, or turn:0's start; its step
    # ids; the record). A turn whose inputs are the very same objects gets the very same
    # record again, so the validation and the store's write find it unchanged by identity
    # instead of serializing and hashing each of a long session's turns after every message.
    records: Mapping[str, tuple[Any, tuple[str, ...], dict[str, Any]]] = field(default_factory=dict)


_NOTHING_KEPT: Mapping[str, StoredActor] = {}


def map_session(
    files: SessionFiles,
    approvals: dict[str, Any],
    previous: MappingCache | None = None,
    kept: Mapping[str, StoredActor] = _NOTHING_KEPT,
) -> tuple[MappedSession, MappingCache]:
    """Map a session's files, its helpers' transcripts included, to v1.2 records.

    ``approvals`` is the snapshot from ``approval_snapshot`` (or the one the store
    kept); ``previous`` is the cache the last call for this session returned; ``kept``
    is what the store holds of each helper actor (looked up only for a helper whose
    transcript cannot be used this time: its stored steps stay as they were).
    Raises ``SourceError`` (``wrong shape: <json path>: <what>``) when the lead's
    document cannot be mapped; a helper's is listed in ``MappedSession.unread``.
    """
    where = str(files.location.messages)
    manifest = files.manifest or {}
    metadata = _dict(manifest.get("metadata"))
    ended_at = valid_timestamp(manifest.get("ended_at"))
    # Only the files of a session being written are measured: it will likely be mapped again.
    measured = previous is not None or ended_at is None
    data = {file.fingerprint.path: file.data for file in files.raw} if measured else {}
    transcript = read_transcript(
        files.messages, where, previous.transcript if previous is not None else None, data.get(where), files.known
    )
    unread: list[SourceError] = []
    helper_transcripts = _read_helpers(files.helpers, previous, unread, data)
    # The CLI's approval flag holds for the whole run, helpers included.
    refused = transcript.approval_refused or any(t.approval_refused for _, t in helper_transcripts)
    tools = ToolContext(
        cwd=_text(manifest.get("cwd")),
        approvals=approvals,
        approval_was_on=refused and approvals.get("kind") == "cli",
        # Once the session ended, a call without a result will never get one.
        ended_status=(_text(manifest.get("status")) or "unknown") if ended_at is not None else None,
    )
    facts = SessionFacts(files.location.session_id, where, tools)
    started_at = _started_at(manifest, transcript, files)
    plan = plan_segments(
        metadata.get("checkpoint"),
        started_at=started_at,
        ended_at=ended_at,
        source_files=[],  # known once the helpers are mapped
    )
    header = digest(canonical_json([facts.session_id, tools.cwd, approvals, tools.approval_was_on, tools.ended_status]))
    fold = _fold(transcript, facts, plan, started_at, header, previous)
    opened_turns = list(fold.opened_turns)
    helpers, helper_caches = _map_helpers(helper_transcripts, facts, plan, started_at, header, previous, unread)
    folds = [fold.resume, *(cache.fold for cache in helper_caches.values() if cache.fold is not None)]
    unread_names = {side.name for side in files.helpers if side.error is not None}
    unread_names.update(side.name for side, _ in helper_transcripts if side.name not in helper_caches)
    helpers.extend(Helper.kept(kept[name]) for name in sorted(unread_names) if name in kept)
    unread[:0] = [side.error for side in files.helpers if side.error is not None]
    used = _files_used(files, {helper.id for helper in helpers}, {problem.where for problem in unread})
    lead_rows = list(fold.rows)
    if files.compaction is not None and files.compaction.error is not None:
        unread.append(files.compaction.error)
    elif files.compaction is not None:
        states = [(state.rows, state.turn_id, state.turn_segment, state.at) for state in fold.resume.before]
        sidecar = SessionFacts(facts.session_id, str(files.compaction.path), tools)
        summary = summary_step(files.compaction.document, transcript, states, sidecar)
        if summary is not None:
            lead_rows.insert(*summary)
    rows = place_helpers(lead_rows, opened_turns, helpers)
    turns, turn_steps = _turn_records(
        facts.session_id, opened_turns, rows, previous.turn_steps if previous is not None else None
    )
    session = _session_record(files, transcript, manifest, metadata, started_at)
    metrics = summed_metrics([transcript.metrics.record(), *(helper.metrics for helper in helpers)])
    if metrics is not None:
        session["metrics"] = metrics
    if ended_at is not None:
        session["ended_at"] = ended_at
    root = {"id": ROOT_ACTOR, "type": "root", "label": _text(transcript.document.get("agent")) or AGENT}
    mapped = MappedSession(
        agent=AGENT,
        session=session,
        # The files the records come from, a kept helper's included (its content is stored).
        segments=[{**segment, "source_files": [path for path, _ in used]} for segment in plan.segments],
        actors=[root, *sorted((helper.actor for helper in helpers), key=lambda actor: str(actor["id"]))],
        turns=turns,
        steps=rows,
        extras=_extras(manifest, metadata, transcript),
        approvals=approvals,
        # A file not used this time is read again at the next start-up.
        source_files=tuple(fingerprint for _, fingerprint in used if fingerprint is not None),
        helper_metrics={helper.id: helper.metrics for helper in helpers if helper.metrics is not None},
        unread=tuple(unread),
        read_texts={step_id: text for resume in folds for step_id, text in resume.read_texts},
    )
    return mapped, MappingCache(header, fold.cached, transcript.resume, fold.resume, helper_caches, turn_steps)


def _files_used(files: SessionFiles, actors: set[str], unread: set[str]) -> list[tuple[str, SourceFile | None]]:
    """(path, fingerprint) of each file whose content is in the records: None for a kept
    helper's, which was not read this time."""
    read = {fingerprint.path: fingerprint for fingerprint in files.source_files}
    used: list[tuple[str, SourceFile | None]] = []
    for path in (str(files.location.messages), str(files.location.manifest)):
        if path in read:
            used.append((path, read[path]))
    for side in files.helpers:
        path = str(side.path)
        if side.name in actors:
            used.append((path, None if path in unread else read.get(path)))
    if files.compaction is not None and str(files.compaction.path) in read:
        used.append((str(files.compaction.path), read[str(files.compaction.path)]))
    return used


def _read_helpers(
    sides: tuple[SideFile, ...], previous: MappingCache | None, unread: list[SourceError], data: Mapping[str, bytes]
) -> list[tuple[SideFile, Transcript]]:
    """The transcripts of the helpers whose files were read; a bad document goes to ``unread``."""
    read: list[tuple[SideFile, Transcript]] = []
    for side in sides:
        if side.error is not None:
            continue
        last = previous.helpers.get(side.name) if previous is not None else None
        where = str(side.path)
        try:
            resume = last.transcript if last is not None else None
            read.append((side, read_transcript(side.document, where, resume, data.get(where))))
        except SourceError as exc:
            unread.append(exc)
    return read


def _map_helpers(
    transcripts: list[tuple[SideFile, Transcript]],
    lead: SessionFacts,
    plan: SegmentPlan,
    started_at: str,
    header: str,
    previous: MappingCache | None,
    unread: list[SourceError],
) -> tuple[list[Helper], dict[str, MappingCache]]:
    """Each helper's steps, by the lead's rules, as its own actor; a failure goes to ``unread``."""
    helpers: list[Helper] = []
    caches: dict[str, MappingCache] = {}
    for side, transcript in transcripts:
        name = side.name
        facts = SessionFacts(lead.session_id, str(side.path), lead.tools, actor_id=name)
        helper_header = digest(canonical_json([header, name]))
        last = previous.helpers.get(name) if previous is not None else None
        try:
            fold = _fold(transcript, facts, plan, started_at, helper_header, last)
        except SourceError as exc:
            unread.append(exc)
            continue
        actor = helper_actor(name, transcript.document, fold.rows)
        helpers.append(Helper(actor, fold.rows, transcript.metrics.record()))
        caches[name] = MappingCache(helper_header, fold.cached, transcript.resume, fold.resume)
    return helpers, caches


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _started_at(manifest: dict[str, Any], transcript: Transcript, files: SessionFiles) -> str:
    """The manifest's start, else the earliest message, else the messages file's mtime."""
    from_manifest = valid_timestamp(manifest.get("started_at"))
    if from_manifest is not None:
        return from_manifest
    if transcript.earliest_ms is not None:
        return iso_from_ms(transcript.earliest_ms)
    messages_path = str(files.location.messages)
    return iso_from_ns(next((f.mtime_ns for f in files.source_files if f.path == messages_path), 0))


def _fold(
    transcript: Transcript,
    facts: SessionFacts,
    plan: SegmentPlan,
    started_at: str,
    header: str,
    previous: MappingCache | None,
) -> Folded:
    reusable: Mapping[CacheKey, MessageSteps] = {}
    if previous is not None and previous.header == header:
        reusable = previous.messages
    last = previous.fold if previous is not None else None
    return fold_messages(transcript, facts, plan, started_at, header, reusable, last)


def _turn_steps(rows: list[StepRow], last: TurnSteps | None) -> dict[str, tuple[str, ...]]:
    """Each turn's step ids: a re-mapping whose rows begin with the last one's (the very same
    rows, which its cache kept) goes through the new rows only, and a turn none of them
    joined keeps its very tuple."""
    start = 0
    step_ids: dict[str, tuple[str, ...]] = {}
    if last is not None and len(rows) >= len(last.rows) and all(map(operator.is_, last.rows, rows)):
        start = len(last.rows)
        step_ids = dict(last.step_ids)
    added: dict[str, list[str]] = {}
    for row in rows[start:]:
        record = row.record
        added.setdefault(record["turn_id"], []).append(record["id"])
    for turn_id, ids in added.items():
        step_ids[turn_id] = (*step_ids.get(turn_id, ()), *ids)
    return step_ids


def _turn_records(
    session_id: str, opened_turns: list[dict[str, Any]], rows: list[StepRow], last: TurnSteps | None
) -> tuple[list[dict[str, Any]], TurnSteps]:
    """The turn records, and what the next mapping may reuse of them (``TurnSteps``)."""
    step_ids = _turn_steps(rows, last)
    kept = last.records if last is not None else {}
    made: dict[str, tuple[Any, tuple[str, ...], dict[str, Any]]] = {}
    turns: list[dict[str, Any]] = []
    if "turn:0" in step_ids:
        # Steps before the first prompt (e.g. a compacted or migrated transcript).
        ids, started_at = step_ids["turn:0"], rows[0].record["at"]
        was = kept.get("turn:0")
        if was is not None and was[0] == started_at and was[1] is ids:
            turn = was[2]
        else:
            turn = {
                "id": "turn:0",
                "session_id": session_id,
                "segment_index": 0,
                "actor_id": ROOT_ACTOR,
                "index": 0,
                "started_at": started_at,
                "step_ids": list(ids),
            }
        made["turn:0"] = (started_at, ids, turn)
        turns.append(turn)
    for opened in opened_turns:
        turn_id = opened["id"]
        ids = step_ids.get(turn_id, ())
        was = kept.get(turn_id)
        # The very same opened turn (the fold's cache kept it) with the very same ids.
        turn = was[2] if was is not None and was[0] is opened and was[1] is ids else {**opened, "step_ids": list(ids)}
        made[turn_id] = (opened, ids, turn)
        turns.append(turn)
    return turns, TurnSteps(tuple(rows), step_ids, made)


def workspace_root(manifest: dict[str, Any] | None) -> str:
    """The session's working directory: ``workspace_root``, else ``cwd``, else empty."""
    manifest = manifest or {}
    return _text(manifest.get("workspace_root")) or _text(manifest.get("cwd")) or ""


def _session_record(
    files: SessionFiles,
    transcript: Transcript,
    manifest: dict[str, Any],
    metadata: dict[str, Any],
    started_at: str,
) -> dict[str, Any]:
    document = transcript.document
    version = _version(_dict(document.get("origin")).get("version")) or _version(
        _dict(metadata.get("sessionHistoryOrigin")).get("version")
    )
    agent: dict[str, Any] = {"kind": AGENT, "version": version or "unknown"}
    format_version = _version(document.get("version"))
    if format_version is not None:
        agent["format_version"] = format_version
    workspace: dict[str, Any] = {"root": workspace_root(manifest)}
    repo = _text(_dict(metadata.get("git")).get("url"))
    if repo is not None:
        workspace["repo"] = repo
    session: dict[str, Any] = {
        "id": files.location.session_id,
        "agent": agent,
        "workspace": workspace,
        "started_at": started_at,
        "source": str(files.location.folder),
    }
    return session


def _version(value: Any) -> str | None:
    """A version as a string (Cline writes the format version as a number)."""
    if type(value) is int:
        return str(value)
    return _text(value)


def _extras(manifest: dict[str, Any], metadata: dict[str, Any], transcript: Transcript) -> SessionExtras:
    model_info = transcript.model_info  # the last call's, when the manifest does not say
    return SessionExtras(
        model=_text(manifest.get("model")) or _text(model_info.get("id")),
        provider=_text(manifest.get("provider")) or _text(model_info.get("provider")),
        agent_title=_text(metadata.get("title")),
        agent_status=_text(manifest.get("status")),
        git_branch=_text(_dict(metadata.get("git")).get("branch")),
    )
