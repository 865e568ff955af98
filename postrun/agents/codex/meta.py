"""A thread's ``session_meta`` (the first line of its rollout): who it is and whose it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from postrun.agents.codex.values import mapping, text, timestamp

GUARDIAN = "guardian"
NOT_A_ROLLOUT = "not a Codex rollout: its first line is not a session_meta record"
# Codex wrote items (``item_completed``) from this version on; older rollouts hold only the
# model-facing history, whose messages are then the only record of what was said.
ITEMS_SINCE = (0, 148)
# A Codex built from its source says 0.0.0 (its workspace's version; a release sets the real
# one): it is the current code, which writes items.
SOURCE_BUILD = (0, 0, 0)


@dataclass(frozen=True, slots=True)
class ThreadMeta:
    """What Postrun uses of ``session_meta.payload``."""

    thread_id: str
    session_id: str  # the root thread's id (a child's session)
    parent_thread_id: str | None  # set for a child: a sub-agent or the guardian
    started_at: str | None
    cwd: str
    cli_version: str | None
    provider: str | None
    repo: str | None
    branch: str | None
    nickname: str | None
    guardian: bool
    depth: int | None

    @property
    def is_child(self) -> bool:
        return self.parent_thread_id is not None

    @property
    def label(self) -> str:
        return GUARDIAN if self.guardian else (self.nickname or self.thread_id)

    @property
    def writes_items(self) -> bool:
        """Its Codex wrote items, so messages are read from them, not from the history."""
        version = version_tuple(self.cli_version)
        return version >= ITEMS_SINCE or version == SOURCE_BUILD


def thread_meta(payload: dict[str, Any], line_timestamp: Any) -> ThreadMeta | None:
    """The thread described by a ``session_meta`` payload; None without a usable ``id``."""
    thread_id = text(payload.get("id"))
    if thread_id is None:
        return None
    source = payload.get("source")
    subagent = mapping(mapping(source).get("subagent"))
    spawn = mapping(subagent.get("thread_spawn"))
    parent = text(payload.get("parent_thread_id")) or text(spawn.get("parent_thread_id"))
    guardian = subagent.get("other") == GUARDIAN or payload.get("thread_source") == "guardian_review"
    git = mapping(payload.get("git"))
    depth = spawn.get("depth")
    return ThreadMeta(
        thread_id=thread_id,
        session_id=text(payload.get("session_id")) or (thread_id if parent is None else parent),
        parent_thread_id=parent if parent != thread_id else None,
        started_at=timestamp(payload.get("timestamp")) or timestamp(line_timestamp),
        cwd=text(payload.get("cwd")) or "",
        cli_version=text(payload.get("cli_version")),
        provider=text(payload.get("model_provider")),
        repo=text(git.get("repository_url")),
        branch=text(git.get("branch")),
        nickname=text(payload.get("agent_nickname")) or text(spawn.get("agent_nickname")),
        guardian=guardian,
        depth=depth if type(depth) is int else None,
    )


def version_tuple(version: str | None) -> tuple[int, ...]:
    """``0.171.0`` as (0, 171, 0); an unknown version sorts first."""
    parts: list[int] = []
    for piece in (version or "").split("."):
        digits = "".join(char for char in piece if char.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits[:9]))
    return tuple(parts)
