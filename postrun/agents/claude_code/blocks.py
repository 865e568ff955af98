"""An assistant line's content as the steps it makes: runs of text (or thinking) blocks
joined into one message each, tool calls, and other blocks kept whole. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_ROLES = {"text": ("assistant", "text"), "thinking": ("thinking", "thinking")}


@dataclass(frozen=True, slots=True)
class Piece:
    """One step's worth of a line: ``index`` is its first block's position in the line."""

    index: int
    block: dict[str, Any]  # the block (a run's first one)
    role: str = ""  # a message's role; "" for a call or another block
    text: str = ""  # a message's text (the run's blocks joined with newlines)

    @property
    def kind(self) -> str:
        return "message" if self.role else "call" if self.block.get("type") == "tool_use" else "block"


def pieces(content: Any) -> list[Piece]:
    """The steps of an assistant ``message.content`` (a string is one text block)."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    found: list[Piece] = []
    run: list[str] = []
    run_start: tuple[int, dict[str, Any], str] | None = None
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        role, key = _ROLES.get(kind, ("", "")) if isinstance(kind, str) else ("", "")
        text = block.get(key) if role else None
        if run_start is not None and (not isinstance(text, str) or role != run_start[2]):
            found.append(Piece(run_start[0], run_start[1], run_start[2], "\n".join(run)))
            run, run_start = [], None
        if isinstance(text, str):
            run_start = run_start or (index, block, role)
            run.append(text)
        elif isinstance(kind, str) and kind:
            found.append(Piece(index, block))
    if run_start is not None:
        found.append(Piece(run_start[0], run_start[1], run_start[2], "\n".join(run)))
    return found
