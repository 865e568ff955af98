"""Where a Codex session's files are: its rollouts, each one thread's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Rollout:
    """One rollout file: whose thread it is, where, and its name in Codex's folder."""

    thread_id: str
    path: Path
    compressed: bool = False  # ``.jsonl.zst``
    archived: bool = False  # under ``archived_sessions/``
    name: str = ""  # relative to Codex's home (``sessions/2026/12/01/rollout-….jsonl``): the vault's name
    folder: Path | None = None  # the sessions (or archive) folder it was found in

    @property
    def vault_name(self) -> str:
        return self.name or self.path.name


@dataclass(frozen=True, slots=True)
class SessionLocation:
    """The rollouts of one session: its root thread's (None while it is not there) and its children's."""

    session_id: str
    root: Rollout | None
    children: tuple[Rollout, ...] = field(default=())
    agent: ClassVar[str] = "codex"

    @property
    def where(self) -> Path:
        """The lead file: the root thread's rollout (a child's while that is not there)."""
        if self.root is not None:
            return self.root.path
        return self.children[0].path if self.children else Path(self.session_id)  # gone: no file

    @property
    def rollouts(self) -> tuple[Rollout, ...]:
        return (self.root, *self.children) if self.root is not None else self.children
