"""``postrun otel push``: stored sessions read, mapped to spans and sent, one trace a session.

The store is opened read-only. Each session is one export request, or several when it is too
big for one (``batches``); a failure stops the push after the sessions already sent (and any
batches of the failing one); nothing in the store is marked either way (pushing again sends the
same ids, which receivers keep once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from postrun.otel.batches import batches
from postrun.otel.mapping import session_spans
from postrun.otel.target import OtelError, OtelTarget
from postrun.review.redact import Redactor
from postrun.store.db import Database, reading
from postrun.store.query import list_sessions, load_envelope, no_session, resolve_session_id, session_details
from postrun.store.search import since_utc


@dataclass(frozen=True, slots=True)
class OtelPushed:
    target: OtelTarget
    sessions: int
    spans: int


def push_sessions(
    db: Path,
    target: OtelTarget,
    references: Sequence[str] = (),
    *,
    since: str | None = None,
    content: bool = False,
    home: Path | None = None,
    timeout: float | None = None,
    on_session: Callable[[str, int], None] = lambda session_id, spans: None,
) -> OtelPushed:
    """Push the sessions ``references`` name (ids or unique prefixes; none: every session),
    those started at or after ``since`` only. Raises NotFound, UsageError (a bad ``since``) and
    OtelError, whose reason says how many sessions went before the failure."""
    from postrun.otel.export import Exporter

    since_at = since_utc(since) if since is not None else None
    with reading(db) as database:
        if database is None:
            if references:
                raise no_session(references[0], db)
            return OtelPushed(target, 0, 0)
        session_ids = _chosen(database, references, since_at)
        exporter = Exporter(target, timeout=timeout)
        redactor = Redactor(home=str(home) if home else None)
        sent = spans = 0
        try:
            for session_id in session_ids:
                details = session_details(database, session_id)
                records = session_spans(
                    load_envelope(database, session_id),
                    model=details.model,
                    provider=details.provider,
                    helper_metrics=details.helper_metrics,
                    content=content,
                    redactor=redactor,
                )
                try:
                    for batch in batches(records):
                        exporter.send(batch)
                except OtelError as exc:
                    done = f"{sent} of {len(session_ids)} sessions pushed"
                    raise OtelError(exc.where, f"{exc.reason} (session {session_id}; {done})") from None
                sent, spans = sent + 1, spans + len(records)
                on_session(session_id, len(records))
        finally:
            exporter.close()
    return OtelPushed(target, sent, spans)


def _chosen(database: Database, references: Sequence[str], since_at: str | None) -> list[str]:
    if not references:
        return [summary.id for summary in reversed(list_sessions(database, since_utc=since_at))]  # oldest first
    chosen = list(dict.fromkeys(resolve_session_id(database, reference) for reference in references))
    if since_at is None:
        return chosen
    recent = {summary.id for summary in list_sessions(database, since_utc=since_at)}
    return [session_id for session_id in chosen if session_id in recent]
