"""The five recall tools over the store: search, list_sessions, get_session, get_steps, file_history.

Each call reads the store through a read-only snapshot (nothing is written, no side file is
left), redacts every text it returns with the one redactor, cuts it to its bound and cites
where a person can look. A bad parameter is a ``UsageError`` with a one-line reason.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from postrun.agents.registry import check_kind
from postrun.errors import UsageError
from postrun.recall import bounds
from postrun.recall.citations import ReviewApp, review_url, show_command
from postrun.recall.models import (
    FileHistory,
    SearchHit,
    SearchResult,
    SessionList,
    SessionOverview,
    SessionRow,
    Step,
    StepCounts,
    StepsPage,
)
from postrun.recall.paths import index_phrase, names_path, target_path
from postrun.recall.present import actor, file_touch, found_in_secret, shown_text, snippet, turn_summary
from postrun.review.flags import FLAG_KINDS
from postrun.review.redact import Redactor
from postrun.review.secrets import find_secrets
from postrun.schema.models import Metrics
from postrun.store import recall
from postrun.store.db import Database, StoreMissing
from postrun.store.query import (
    SessionSummary,
    list_sessions,
    no_session,
    resolve_session_id,
    session_details,
)
from postrun.store.search import query_words, search_query
from postrun.store.snapshot import read_store
from postrun.store.verdicts import Verdict, current_verdicts
from postrun.text import one_line
from postrun.timestamps import normalize_timestamp, utc_iso

T = TypeVar("T")
_TOKEN = re.compile(r"\w+")
_TERM = re.compile(r"[^\W_]")  # a character the index's unicode61 tokenizer keeps in a word


_Answer = tuple[recall.FoundStep, str | None]  # a step found, and its text as shown (None: no words asked)


def _answers(
    fetch: Callable[[int], list[recall.FoundStep]], wanted: int, asked: list[str], redactor: Redactor
) -> tuple[list[_Answer], bool]:
    """The first ``wanted`` steps found (``fetch(count)`` gives the best ``count``) but those found
    only by a word inside a secret (``found_in_secret``), fetching more while such steps are
    left out, up to ``SEARCH_FETCHED``; each with its text as shown. And whether the last fetch
    was full: more steps may match than were read."""
    checked: dict[tuple[str, str], str | None] = {}  # each step's shown text, None when left out

    def answer(step: recall.FoundStep) -> str | None:
        key = (step.session_id, step.step_id)
        if key not in checked:  # a fetch of more finds the last fetch's steps again
            text = shown_text(step.record, redactor)
            checked[key] = None if found_in_secret(step.record, text, asked) else text
        return checked[key]

    fetched = wanted
    while True:
        found = fetch(fetched)
        if not asked:
            kept: list[_Answer] = [(step, None) for step in found]
        else:
            kept = [(step, text) for step in found if (text := answer(step)) is not None]
        unread = len(found) == fetched
        if len(kept) >= wanted or not unread or fetched >= bounds.SEARCH_FETCHED:
            return kept, unread
        fetched = min(2 * fetched, bounds.SEARCH_FETCHED)


@dataclass(frozen=True)
class Recall:
    """Recall over the store at ``db``; ``home`` is shown as ``~``; ``clock`` says when "now" is."""

    db: Path
    review: ReviewApp
    clock: Callable[[], datetime]
    home: str | None = None

    def search(
        self,
        query: str,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        outcome: str | None = None,
        flag: str | None = None,
        since: str | None = None,
        limit: int = bounds.SEARCH_LIMIT[0],
        include_active: bool = False,
    ) -> SearchResult:
        check_kind(agent, "agent")  # an unknown kind would answer nothing, read as "never done"
        if flag is not None and flag != "any" and flag not in FLAG_KINDS:
            raise UsageError("flag", f"unknown flag kind {flag!r} (known: {', '.join(FLAG_KINDS)}, any)")
        if "\x00" in query:  # SQLite's query parser stops at a NUL
            raise UsageError("query", "holds a NUL character")
        if not query.split() and flag is None:
            raise UsageError("query", "empty: give the words to find (or a flag to list flagged steps)")
        if query.split() and not _TERM.search(query):
            # The index holds words only: "*" or "--" would match nothing, read as "never done".
            raise UsageError("query", f"{query.strip()!r} holds no word to find (search matches words, no wildcards)")
        secrets = find_secrets(query)
        if secrets:
            raise UsageError("query", f"holds a secret ({secrets[0].kind}): search for the words around it instead")
        checked = search_query(query, flag=flag)
        scope = recall.Scope(agent=agent, workspace=self._root(workspace), outcome=outcome, since_utc=_since(since))

        redactor = self._redactor()
        asked = query_words(query)

        def work(database: Database) -> tuple[list[_Answer], bool, int]:
            active = () if include_active else self._active(database)

            def fetch(count: int) -> list[recall.FoundStep]:
                return recall.found_steps(
                    database,
                    checked,
                    replace(scope, exclude=active),
                    limit=count,
                    window=bounds.SEARCH_WINDOW,
                    older=bounds.SEARCH_OLDER,
                )

            return (*_answers(fetch, limit + 1, asked, redactor), len(active))

        kept, unread, left_out = self._read(work) or ([], False, 0)
        words = _TOKEN.findall(query)
        hits = [
            SearchHit(
                session_id=step.session_id,
                step_id=step.step_id,
                seq=step.seq,
                type=step.type,
                outcome=step.outcome,
                at=step.at,
                snippet=snippet(step.record, text, words, redactor),
                agent=step.agent,
                workspace=redactor.text(step.workspace, "workspace"),
                actor_id=str(step.record.get("actor_id", "root")),
                **self._cite(step.session_id, step.seq),
            )
            for step, text in kept[:limit]
        ]
        return SearchResult(hits=hits, more=len(kept) > limit or unread, active_left_out=left_out)

    def list_sessions(
        self,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        since: str | None = None,
        limit: int = bounds.SESSIONS_LIMIT[0],
    ) -> SessionList:
        check_kind(agent, "agent")
        root = self._root(workspace)
        since_utc = _since(since)

        def work(database: Database) -> tuple[list[SessionSummary], dict[str, Verdict]]:
            found = list_sessions(database, agent=agent, limit=limit + 1, workspace=root, since_utc=since_utc)
            return found, current_verdicts(database, [summary.id for summary in found[:limit]])

        found, verdicts = self._read(work) or ([], {})
        redactor = self._redactor()
        rows = [
            SessionRow(
                id=summary.id,
                agent=summary.agent,
                title=_title(summary.title, redactor),
                workspace=redactor.text(summary.workspace, "workspace"),
                started_at=summary.started_at,
                ended_at=summary.ended_at,
                steps=summary.steps,
                failed=summary.failed_steps,
                flagged=summary.flagged_steps,
                verdict=verdicts[summary.id].state if summary.id in verdicts else None,
                **self._cite(summary.id),
            )
            for summary in found[:limit]
        ]
        return SessionList(sessions=rows, more=len(found) > limit)

    def get_session(self, session_id: str) -> SessionOverview:
        def work(database: Database) -> SessionOverview:
            full_id = resolve_session_id(database, session_id)
            record = recall.session_record(database, full_id)
            if record is None:
                raise no_session(full_id, self.db)
            details = session_details(database, full_id)
            turns, total = recall.turn_facts(database, full_id, limit=bounds.TURNS_SHOWN)
            actors = recall.actor_records(database, full_id, limit=bounds.ACTORS_SHOWN)
            counts = recall.step_counts(database, full_id)
            redactor = self._redactor()
            return SessionOverview(
                id=full_id,
                title=_title(details.title, redactor),
                agent=str(record["agent"]["kind"]),
                agent_version=redactor.text(str(record["agent"].get("version", "")), "agent version"),
                workspace=redactor.text(str(record["workspace"]["root"]), "workspace"),
                started_at=str(record["started_at"]),
                ended_at=record.get("ended_at"),
                model=None if details.model is None else redactor.text(details.model, "model"),
                git_branch=None if details.git_branch is None else redactor.text(details.git_branch, "branch"),
                metrics=Metrics.model_validate(record["metrics"]) if record.get("metrics") else None,
                turns=[turn_summary(turn, redactor) for turn in turns],
                turns_left_out=total - len(turns),
                actors=[actor(helper, redactor) for helper in actors],
                counts=StepCounts(
                    steps=counts.steps, by_type=counts.by_type, failed=counts.failed, flagged=counts.flagged
                ),
                **self._cite(full_id),
            )

        return self._read_session(work, session_id)

    def get_steps(
        self,
        session_id: str,
        *,
        around_seq: int | None = None,
        from_seq: int | None = None,
        limit: int = bounds.STEPS_LIMIT[0],
        max_chars: int = bounds.STEP_CHARS[0],
    ) -> StepsPage:
        if around_seq is not None and from_seq is not None:
            raise UsageError("around_seq", "give around_seq or from_seq, not both")

        def work(database: Database) -> tuple[str, list[dict[str, Any]]]:
            full_id = resolve_session_id(database, session_id)
            start = from_seq or 0
            if around_seq is not None:
                start = recall.seq_before(database, full_id, around_seq, limit // 2)
            return full_id, recall.step_run(database, full_id, from_seq=start, limit=limit + 1)

        full_id, records = self._read_session(work, session_id)
        redactor = self._redactor()
        window = records[:limit]
        shown_steps: dict[int, tuple[Step, int, int]] = {}

        def shown(index: int) -> tuple[Step, int, int]:
            """The window's step at ``index`` as the page shows it, its size and its cuts."""
            if index not in shown_steps:
                record = window[index]
                step, cut = bounds.cut_strings(redactor.value(record, f"step #{record['seq']}"), max_chars)
                # One step alone is held to the page's bound too (README: "Bounded").
                step["payload"], trimmed = bounds.fit(step["payload"], bounds.STEPS_BUDGET_CHARS)
                shown_steps[index] = (Step.model_validate(step), bounds.text_size(step), cut + trimmed)
            return shown_steps[index]

        # The page grows from the step asked for (the first, or the one at around_seq), so that
        # step is always on it.
        first = 0
        if around_seq is not None and window:
            first = next((i for i, record in enumerate(window) if record["seq"] >= around_seq), len(window) - 1)
        span = bounds.page_span(lambda index: shown(index)[1], first, len(window), around=around_seq is not None)
        page = [shown(index) for index in span]
        following = records[span.stop] if span.stop < len(records) else None
        return StepsPage(
            session_id=full_id,
            steps=[step for step, _, _ in page],
            next_from_seq=None if following is None else int(following["seq"]),
            cut_fields=sum(cut for _, _, cut in page),
            **self._cite(full_id),
        )

    def file_history(
        self,
        path: str,
        *,
        workspace: str | None = None,
        limit: int = bounds.HISTORY_LIMIT[0],
        include_active: bool = False,
    ) -> FileHistory:
        target = target_path(self._path(path) or "", self._path(workspace))
        phrase = index_phrase(target)

        def work(database: Database) -> tuple[list[recall.FoundStep], bool, int]:
            active = () if include_active else self._active(database)
            touches: list[recall.FoundStep] = []
            more = False
            candidates = recall.steps_naming(database, phrase, recall.Scope(exclude=active))
            with contextlib.closing(candidates):
                for examined, step in enumerate(candidates, 1):
                    if names_path(step.record, target, step.workspace):
                        if len(touches) == limit:
                            more = True
                            break
                        touches.append(step)
                    if examined == bounds.HISTORY_CANDIDATES:
                        more = True  # not every candidate was read: there may be more
                        break
            return touches, more, len(active)

        found, more, left_out = self._read(work) or ([], False, 0)
        redactor = self._redactor()
        return FileHistory(
            path=redactor.text(target, "path"),
            touches=[file_touch(step, redactor, self._cite(step.session_id, step.seq)) for step in found],
            more=more,
            active_left_out=left_out,
        )

    def _read(self, work: Callable[[Database], T]) -> T | None:
        """``work`` over the store; None when there is no store yet (it reads as empty)."""
        try:
            return read_store(self.db, work)
        except StoreMissing:
            return None

    def _read_session(self, work: Callable[[Database], T], reference: str) -> T:
        """``work`` over the store; no store yet has no session ``reference``."""
        try:
            return read_store(self.db, work)
        except StoreMissing:
            raise no_session(reference, self.db) from None

    def _path(self, path: str | None) -> str | None:
        """A path as the caller gave it, ``~`` (how answers show the home folder) expanded, normalized."""
        if path is None or not path.strip():
            return path
        if self.home and (path == "~" or path.startswith("~/")):
            path = self.home.rstrip("/") + path[1:]
        return posixpath.normpath(path) if posixpath.isabs(path) else path

    def _root(self, workspace: str | None) -> str | None:
        """A workspace filter: a root is an absolute path, so a relative one (``.``, ``app``)
        or an empty one would match nothing, read as "never done": a bad parameter instead."""
        root = self._path(workspace)
        if root is not None and not posixpath.isabs(root):
            raise UsageError("workspace", f"{workspace!r} is not an absolute path (a workspace root, or ~/…)")
        return root

    def _active(self, database: Database) -> tuple[str, ...]:
        return tuple(recall.active_sessions(database, utc_iso(self.clock() - bounds.ACTIVE_WINDOW)))

    def _redactor(self) -> Redactor:
        return Redactor(home=self.home)

    def shown(self, text: str) -> str:
        """``text`` (an error's reason) as an answer shows it: secrets masked, the home folder ``~``."""
        return self._redactor().text(text, "error")

    def _cite(self, session_id: str, seq: int | None = None) -> dict[str, str]:
        return {"show": show_command(session_id), "url": review_url(self.review.base(), session_id, seq)}


def _title(title: str, redactor: Redactor) -> str:
    """A title (a first prompt) on one line: redacted first, as written, since the detector
    finds some secrets by their line (a .pgpass line) and folding joins the lines."""
    return bounds.cut(one_line(redactor.text(title, "title")), bounds.TITLE_CHARS)


def _since(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return normalize_timestamp(text.strip())
    except ValueError:
        raise UsageError("since", f"expected a date like 2026-11-29 or an ISO date-time, got {text!r}") from None
