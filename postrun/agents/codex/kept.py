"""A child thread whose rollout cannot be read now, as the store keeps it.

Its stored steps stay where they were in the session (after the step that started it), with
their turns, until its rollout can be read again."""

from __future__ import annotations

from typing import Any

from postrun.agents.codex.entries import ROOT_ACTOR, Entry, Facts
from postrun.agents.codex.meta import GUARDIAN, ThreadMeta
from postrun.agents.codex.thread import ThreadFold
from postrun.agents.codex.usage import Usage
from postrun.records import StoredActor


def kept_thread(actor: StoredActor, session_id: str) -> ThreadFold:
    """A fold holding the actor's stored steps as they are (placed as a child of its parent)."""
    record = actor.record
    thread_id = str(record["id"])
    parent = record.get("parent_id")
    label = record.get("label")
    fold = ThreadFold()
    fold.facts = Facts(session_id, thread_id, f"{thread_id}/")
    fold.meta = ThreadMeta(
        thread_id=thread_id,
        session_id=session_id,
        parent_thread_id=session_id if parent in (None, ROOT_ACTOR) else str(parent),
        started_at=None,
        cwd="",
        cli_version=None,
        provider=None,
        repo=None,
        branch=None,
        nickname=label if isinstance(label, str) and label != GUARDIAN else None,
        guardian=label == GUARDIAN,
        depth=None,
    )
    for line, row in enumerate(actor.steps):
        stored = row.record
        fold.entries[row.id] = Entry(row.id, line, str(stored["at"]), str(stored["turn_id"]))
        fold.records[row.id] = (stored,)
    fold.usage = _usage(actor.metrics)
    return fold


def _usage(metrics: dict[str, Any] | None) -> Usage:
    usage = Usage()
    if metrics is not None:
        tokens = metrics.get("tokens", {})
        usage.requests = int(metrics.get("api_requests", 0))
        usage.sums = [int(tokens.get(name, 0)) for name in ("input", "cache_read", "cache_creation", "output")]
    return usage
