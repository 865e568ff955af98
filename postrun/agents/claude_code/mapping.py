"""A Claude Code session's files as v1.2 records: pure, and incremental.

Each transcript is folded (``fold``) from where the last mapping stopped: only its new
lines are parsed and folded. The steps are then placed (``place``) and each is built as a
``StepRow`` only when it is new or something it depends on changed (a result came, the
call's process ended, its sub-agent got linked); a step that only moved gets its new
``seq`` (a background sub-agent's steps go in before the main agent's later ones). With or
without a cache, the result is the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from postrun.agents.claude_code.assemble import Assembly, assemble
from postrun.agents.claude_code.files import ReadFrom, SessionFiles
from postrun.agents.claude_code.fold import ROOT_ACTOR, Fold, Usage, fold_records
from postrun.agents.claude_code.locate import AGENT, META_SUFFIX
from postrun.agents.claude_code.place import shape
from postrun.agents.claude_code.text import LARGEST
from postrun.appendonly import Appended, Mark
from postrun.errors import NothingSaid, NotParseableYet, SourceError
from postrun.jsonl import parse_lines
from postrun.records import MappedSession, SessionExtras, StoredActor
from postrun.timestamps import utc_iso


@dataclass(frozen=True, slots=True)
class MappingCache:
    """What the next ``map_session`` of the same session may reuse (keep it in memory only).

    ``since`` is what the next ``read_session`` reads from: each transcript's mark, where
    its fold stopped.
    """

    main: Fold
    subagents: Mapping[str, Fold]
    since: ReadFrom
    assembly: Assembly | None = None


def read_from(cache: MappingCache | None) -> ReadFrom:
    """Where a read of the session may start, given the last mapping's cache."""
    return cache.since if cache is not None else ReadFrom({})


_NOTHING_KEPT: Mapping[str, StoredActor] = {}
NOTHING_SAID = "not recorded: no line of a session in this transcript (yet), only Claude Code's summaries"


def map_session(
    files: SessionFiles,
    previous: MappingCache | None = None,
    kept: Mapping[str, StoredActor] = _NOTHING_KEPT,
) -> tuple[MappedSession, MappingCache]:
    """Map a session's files, its sub-agents' included, to v1.2 records.

    ``previous`` is the cache the last call for this session returned (``files`` must have
    been read from ``read_from(previous)``); ``kept`` is what the store holds of each
    sub-agent actor, used only for one whose transcript cannot be read this time.
    """
    reading = _Reading()
    main = reading.advance(previous.main if previous else None, files.main, ROOT_ACTOR)
    if main.end == 0:
        # Not one line complete yet: a session just created, caught before its first newline.
        raise NotParseableYet(files.main.fingerprint.path, "transcript", "no complete line yet")
    if main.records == 0:
        raise SourceError(files.main.fingerprint.path, "not a Claude Code transcript (no line is a record)")
    if main.session_lines == 0:
        # Only records of no session: the ``summary`` lines older Claude Code wrote of other
        # sessions (no ``sessionId``, no prompt, no reply). No turn and no step: not a session
        # to list (claude-code.md §1: a session's id is the ``sessionId`` on its lines), and not
        # an error either; a line that names the session makes it one.
        raise NothingSaid(files.main.fingerprint.path, NOTHING_SAID)
    subagents: dict[str, Fold] = {}
    unread: list[SourceError] = []
    unread_names: list[str] = []
    metas: dict[str, dict[str, Any] | None] = {}
    for subagent in files.subagents:
        last = previous.subagents.get(subagent.actor_id) if previous is not None else None
        metas[subagent.actor_id] = subagent.meta
        if subagent.transcript is None:
            if subagent.error is not None:
                unread.append(subagent.error)
            if last is not None:
                subagents[subagent.actor_id] = last  # as it was folded before: still its latest
            elif subagent.actor_id in kept:
                unread_names.append(subagent.actor_id)
            continue
        subagents[subagent.actor_id] = reading.advance(last, subagent.transcript, subagent.actor_id)
    session_id = files.location.session_id
    started_at = _started_at(main, files.main)
    links = shape(main, subagents, metas)
    folds = {ROOT_ACTOR: main, **subagents}
    last_assembly = previous.assembly if previous is not None and not unread_names and not reading.restarted else None
    assembled = assemble(session_id, folds, links, started_at, last_assembly)
    assembly = assembled.assembly
    rows, turns = assembly.rows, assembly.turns
    if unread_names:
        # A sub-agent whose transcript cannot be read now: its steps as the store holds them, at the end.
        kept_rows = [row for name in unread_names for row in kept[name].steps]
        rows = [*rows, *(row.with_fields(seq=len(rows) + position) for position, row in enumerate(kept_rows))]
        turns = [*turns]
    main = main.with_rows(assembled.rebuilt.get(ROOT_ACTOR, {}))
    subagents = {name: fold.with_rows(assembled.rebuilt.get(name, {})) for name, fold in subagents.items()}
    transcripts = [files.main.fingerprint.path]
    transcripts.extend(str(sub.path) for sub in files.subagents if sub.actor_id in subagents)
    actors = [{"id": ROOT_ACTOR, "type": "root", "label": AGENT}]
    for name in sorted([*subagents, *unread_names]):
        actors.append(_actor(name, links.parents.get(name, ROOT_ACTOR), metas.get(name)))
    read_texts = main.read_texts
    if any(fold.read_texts for fold in subagents.values()):
        read_texts = dict(main.read_texts)
        for fold in subagents.values():
            read_texts.update(fold.read_texts)
    mapped = MappedSession(
        agent=AGENT,
        session=_session(files, main, subagents, started_at),
        segments=_segments(main, started_at, transcripts),
        actors=actors,
        turns=turns,
        steps=rows,
        extras=SessionExtras(model=main.facts.model, git_branch=main.facts.branch),
        source_files=files.source_files,
        unread=tuple(unread),
        read_texts=read_texts,
        incomplete=tuple(reading.incomplete),
    )
    kept_assembly = None if unread_names else assembly
    seen = {fingerprint.path: fingerprint for fingerprint in files.source_files}
    metas_by_path = {str(sub.path.with_name(f"{sub.actor_id}{META_SUFFIX}")): sub.meta for sub in files.subagents}
    since = ReadFrom(reading.marks, main.facts.cwd, seen, metas_by_path)
    return mapped, MappingCache(main, subagents, since, kept_assembly)


class _Reading:
    """The transcripts of one mapping folded on: where each stopped, which ended mid-line,
    and which were read whole again although a fold of them was kept (rewritten)."""

    def __init__(self) -> None:
        self.marks: dict[str, Mark] = {}
        self.incomplete: list[str] = []
        self.restarted: list[str] = []

    def advance(self, last: Fold | None, read: Appended, actor_id: str) -> Fold:
        """``last`` extended by the new bytes of ``read`` (a fresh fold when it was read whole)."""
        where = read.fingerprint.path
        if read.start == 0 or last is None:
            if last is not None:
                self.restarted.append(actor_id)
            if read.start != 0:
                raise ValueError(f"{where}: read from {read.start}, but no fold to extend")
            base = Fold(actor_id, actor_id == ROOT_ACTOR)
        elif last.end != read.start:
            raise ValueError(f"{where}: read from {read.start}, folded up to {last.end}")
        else:
            base = last
        lines = parse_lines(read.new, read.start)
        self.marks[where] = read.mark(lines.end)
        if lines.incomplete:
            self.incomplete.append(where)
        if not lines.records and lines.end == base.end and not lines.skipped:
            return base
        return fold_records(base, lines.records, lines.end, lines.skipped)


def _started_at(main: Fold, read: Appended) -> str:
    """The earliest timestamp of the main transcript, else (none yet) the file's mtime."""
    if main.facts.earliest is not None:
        return main.facts.earliest[1]
    moment = datetime.fromtimestamp(read.fingerprint.mtime_ns / 1e9, UTC)
    return utc_iso(moment)


def _actor(actor_id: str, parent_id: str, meta: dict[str, Any] | None) -> dict[str, Any]:
    actor: dict[str, Any] = {"id": actor_id, "type": "subagent", "parent_id": parent_id}
    label = meta.get("description") if meta is not None else None
    if isinstance(label, str) and label:
        actor["label"] = label
    return actor


def _session(files: SessionFiles, main: Fold, subagents: Mapping[str, Fold], started_at: str) -> dict[str, Any]:
    session: dict[str, Any] = {
        "id": files.location.session_id,
        "agent": {"kind": AGENT, "version": main.facts.version or "unknown"},
        "workspace": {"root": main.facts.cwd or ""},
        "started_at": started_at,
        "source": str(files.location.source),
    }
    # Claude Code writes no end: a last record that is a ``cost-state`` is an invocation that exited.
    if main.facts.last_is_cost and main.facts.latest is not None:
        session["ended_at"] = main.facts.latest[1]
    session["metrics"] = _metrics(main, subagents)
    return session


_TOKEN_NAMES = ("input", "output", "cache_read", "cache_creation")


def _metrics(main: Fold, subagents: Mapping[str, Fold]) -> dict[str, Any]:
    """Usage once per API response over every transcript; cost as the last ``cost-state`` said,
    0 when there is none (claude-code.md §4: a run killed before any), so a session killed before
    its first reply has metrics too: no request, no token, no cost."""
    folds = [main, *(subagents[name] for name in sorted(subagents))]
    requests, tokens = _usage(folds)
    return {
        "cost_usd": main.facts.cost_usd if main.facts.cost_usd is not None else 0.0,
        "api_requests": requests,
        # Capped where the store's integers end (only absurd counts get there).
        "tokens": dict(zip(_TOKEN_NAMES, (min(count, LARGEST) for count in tokens), strict=True)),
    }


def _usage(folds: list[Fold]) -> tuple[int, Usage]:
    """(API responses, tokens) of the transcripts together: each fold's own sums, unless one
    response is recorded in two of them (it then counts once, with the later one's usage)."""
    if len(folds) > 1:
        seen: set[str] = set()
        for fold in folds:
            if not seen.isdisjoint(fold.usage):
                return _union(folds)
            seen.update(fold.usage)
    tokens: Usage = (0, 0, 0, 0)
    for fold in folds:
        tokens = _sum(tokens, fold.tokens)
    return sum(len(fold.usage) for fold in folds), tokens


def _sum(left: Usage, right: Usage) -> Usage:
    return (left[0] + right[0], left[1] + right[1], left[2] + right[2], left[3] + right[3])


def _union(folds: list[Fold]) -> tuple[int, Usage]:
    usage: dict[str, Usage | None] = {}
    for fold in folds:
        usage.update(fold.usage)
    tokens: Usage = (0, 0, 0, 0)
    for counts in usage.values():
        if counts is not None:
            tokens = _sum(tokens, counts)
    return len(usage), tokens


def _segments(main: Fold, started_at: str, transcripts: list[str]) -> list[dict[str, Any]]:
    segments: list[dict[str, Any]] = []
    last = len(main.segments) - 1
    for position, found in enumerate(main.segments):
        segment: dict[str, Any] = {
            "index": found["index"],
            "start_reason": found["start_reason"],
            "started_at": started_at if position == 0 else found["started_at"],
        }
        ended = found.get("ended_at")
        if position == last and main.facts.after_cost:
            ended = found.get("last_at")  # closed by a ``cost-state``, no record since
        if ended is not None:
            segment["ended_at"] = ended
        segment["source_files"] = list(transcripts)
        segments.append(segment)
    return segments
