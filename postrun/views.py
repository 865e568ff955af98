"""Reading the store for people and programs: ``sessions``, ``show``, ``export``, ``search``.

Each function opens the store read-only for one read and closes it (``store.db.reading``): a
store that does not exist yet reads as empty, and reading it creates nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from postrun.errors import PostrunError, UsageError
from postrun.store import vault
from postrun.store.db import reading
from postrun.store.query import (
    SessionDetails,
    SessionSummary,
    history,
    list_sessions,
    load_envelope,
    no_session,
    resolve_session_id,
    session_details,
)
from postrun.store.verdicts import Verdict, check_verdict_filter, current_verdicts
from postrun.text import json_escaped

# Rendering, redaction and search are imported by the functions that use them: `postrun
# sessions` (a process of its own each time) reads summaries only, and the flag rules,
# renderers and secret patterns were most of its start.
if TYPE_CHECKING:
    from postrun.review.redact import Masked
    from postrun.store.search import SearchHit

ExportFormat = Literal["json", "jsonl", "markdown", "html"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("json", "jsonl", "markdown", "html")
# Formats for reading and sharing are redacted unless asked not to; json/jsonl are the archive.
REDACTED_BY_DEFAULT: frozenset[ExportFormat] = frozenset({"markdown", "html"})


@dataclass(frozen=True, slots=True)
class Export:
    content: bytes
    masked: list[Masked]  # what the redactor replaced (empty when not redacted)
    redacted: bool


def kept_raw_versions(db: Path, session_ids: Iterable[str]) -> dict[str, list[dict[str, object]]]:
    """For ``sessions --json``: which raw versions the vault keeps of each session."""
    with reading(db) as database:
        if database is None:
            return {}
        return {
            session_id: [v.as_json() for v in vault.kept_versions(database, session_id)] for session_id in session_ids
        }


def reviewed_sessions(
    db: Path,
    *,
    agent: str | None = None,
    limit: int | None = None,
    verdict: str | None = None,
    flagged: bool = False,
) -> list[tuple[SessionSummary, Verdict | None]]:
    """Stored sessions (newest first) with their current review verdict; ``verdict`` keeps only
    the sessions with that verdict (``unreviewed``: none yet), ``flagged`` those with a flagged step."""
    check_verdict_filter(verdict)
    with reading(db) as database:
        if database is None:
            return []
        summaries = list_sessions(database, agent=agent, limit=None if verdict else limit, flagged=flagged)
        verdicts = current_verdicts(database, [summary.id for summary in summaries])
    pairs = [(summary, verdicts.get(summary.id)) for summary in summaries]
    if verdict is not None:
        pairs = [pair for pair in pairs if (pair[1].state if pair[1] else "unreviewed") == verdict]
    return pairs[:limit] if limit is not None else pairs


def show_session(
    db: Path, reference: str, *, with_history: bool = False, redact: bool = False, home: Path | None = None
) -> str:
    """The ``postrun show`` timeline of the session ``reference`` names (an id or unique prefix);
    ``redact``: secrets masked and ``home`` shown as ``~``, as in a shared export."""
    from postrun import render
    from postrun.review.redact import Redactor

    with reading(db) as database:
        if database is None:
            raise no_session(reference, db)
        session_id = resolve_session_id(database, reference)
        envelope = load_envelope(database, session_id)
        details = _with_source_state(session_details(database, session_id))
        entries = history(database, session_id) if with_history else None
        kept = vault.kept_versions(database, session_id) if with_history else None
    raw = render.raw_versions(kept) if kept is not None else []
    if redact:
        redactor = Redactor(home=str(home) if home else None)
        envelope = redactor.envelope(envelope)
        details = redactor.dataclass(details, "session")
        if entries is not None:
            entries = [replace(e, record=redactor.value(e.record, f"history {e.record_id}")) for e in entries]
        raw = [redactor.text(line, "raw copies") for line in raw]
    return "\n".join(render.timeline(envelope, details, entries) + raw) + "\n"


def _with_source_state(details: SessionDetails) -> SessionDetails:
    """``details`` saying whether the session's lead file is still where it was read."""
    lead = details.lead_file
    return replace(details, source_removed=lead is not None and not os.path.lexists(lead))


def export_session(
    db: Path, reference: str, export_format: ExportFormat, *, redact: bool | None = None, home: Path | None = None
) -> Export:
    """The session ``reference`` names as the v1.2 envelope (json), JSON lines, Markdown or one
    HTML file; ``redact`` (default: on for markdown and html) masks secrets and shows ``home`` as ``~``."""
    from postrun.review.redact import Redactor
    from postrun.schema import SchemaError, validate_envelope

    with reading(db) as database:
        if database is None:
            raise no_session(reference, db)
        session_id = resolve_session_id(database, reference)
        envelope = load_envelope(database, session_id)
        details = session_details(database, session_id)
    try:
        validate_envelope(envelope)
    except SchemaError as exc:
        # A store written by this Postrun always holds valid records; say so loudly if not.
        raise PostrunError(
            f"session {session_id}", f"stored records break the v1.2 schema: {exc.problems[0]}"
        ) from None
    redacted = export_format in REDACTED_BY_DEFAULT if redact is None else redact
    redactor = Redactor(home=str(home) if home else None)
    if redacted:
        envelope = redactor.envelope(envelope)
        details = redactor.dataclass(details, "session")
    return Export(_encode(envelope, details, export_format), redactor.masked, redacted)


def _encode(envelope: dict[str, Any], details: SessionDetails, export_format: ExportFormat) -> bytes:
    from postrun import render_html, render_markdown

    # JSON keeps every value as it is; C1 and bidi controls are written as \u escapes, so no
    # viewer of the file shows text reordered or acts on them.
    if export_format == "json":
        return json_escaped(orjson.dumps(envelope, option=orjson.OPT_INDENT_2) + b"\n")
    if export_format == "jsonl":
        lines = [orjson.dumps({"record": "session", "data": envelope["session"]})]
        for kind, key in (("segment", "segments"), ("actor", "actors"), ("turn", "turns"), ("step", "steps")):
            lines += [orjson.dumps({"record": kind, "data": record}) for record in envelope[key]]
        return json_escaped(b"\n".join(lines) + b"\n")
    if export_format == "html":
        return render_html.document(envelope, details).encode()
    return render_markdown.markdown(envelope, details).encode()


def search_steps(
    db: Path,
    text: str,
    *,
    step_type: str | None = None,
    failed: bool = False,
    since: str | None = None,
    flag: str | None = None,
    agent: str | None = None,
    limit: int = 50,
    window: int | None = None,
    redact: bool = False,
    home: Path | None = None,
) -> list[SearchHit]:
    """``postrun search``: steps matching every word of ``text`` (``window``: ranked among the
    newest that many matches only; ``flag``: only steps with that flag kind, or ``any``); the
    arguments are checked (UsageError) before the store is opened. ``redact``: every text of a
    hit masked, and ``home`` shown as ``~``, as in a shared export."""
    from postrun.review.flags import FLAG_KINDS
    from postrun.review.redact import Redactor, given_away
    from postrun.store import codec
    from postrun.store.browse import load_step
    from postrun.store.search import search, search_query

    if flag is not None and flag != "any" and flag not in FLAG_KINDS:
        raise UsageError("--flag", f"unknown flag kind {flag!r} (known: {', '.join(FLAG_KINDS)}, any)")
    query = search_query(text, step_type=step_type, failed=failed, since=since, flag=flag, agent=agent)
    with reading(db) as database:
        if database is None:
            return []
        hits = search(database, query, limit=limit, window=window)
        if not redact:
            return hits
        redactor = Redactor(home=str(home) if home else None)
        redacted = []
        for hit in hits:
            where = f"step #{hit.seq} {hit.step_id}"
            # A window of the step's indexed text (the start of it without words, but for a flagged
            # step's reasons): its secrets are found in the whole, so one the window cuts is masked.
            if query.match or query.flag is None:
                step = load_step(database, hit.session_id, hit.step_id)
                fields = codec.search_fields(step)
                shown = redactor.snippet(hit.snippet, fields, codec.SEARCH_FIELD_CHARS, where, given_away(step))
                hit = replace(hit, snippet=shown)
            redacted.append(redactor.dataclass(hit, where))
        return redacted


def has_store(db: Path) -> bool:
    """Whether there is a store at ``db`` to read (a reader that found nothing says which it was)."""
    with reading(db) as database:
        return database is not None
