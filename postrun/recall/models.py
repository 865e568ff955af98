"""The shapes of recall's answers; their JSON schemas are the tools' output schemas.

Every text in them has been through the redactor and cut to its bound before it is put here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from postrun.schema import models
from postrun.schema.models import Metrics


class _Exported(BaseModel):
    """A record as the export has it: an optional field is absent, never null."""

    @model_serializer(mode="wrap")
    def _absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class Step(_Exported, models.Step):
    pass


class Actor(_Exported, models.Actor):
    pass


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Cited(_Answer):
    show: str = Field(description="The command that prints the session: `postrun show <id>`.")
    url: str = Field(description="The review app's page for it (`postrun open` signs a browser in).")


class SearchHit(Cited):
    session_id: str
    step_id: str
    seq: int = Field(description="The step's place in its session (get_steps' around_seq).")
    type: str = Field(description="command, edit, read, message or other.")
    outcome: str
    at: str = Field(description="When the step happened (UTC).")
    snippet: str = Field(description="The text around the first word found.")
    agent: str
    workspace: str
    actor_id: str = Field(description="Who did it: root (the lead) or a helper's actor id.")


class SearchResult(_Answer):
    hits: list[SearchHit]
    more: bool = Field(description="More steps matched than the limit let through.")
    active_left_out: int = Field(description="Sessions active in the last 10 minutes, left out (include_active).")


class SessionRow(Cited):
    id: str
    agent: str
    title: str
    workspace: str
    started_at: str
    ended_at: str | None = Field(description="None while the session is open.")
    steps: int
    failed: int = Field(description="Steps that failed.")
    flagged: int = Field(description="Steps with a risk flag.")
    verdict: str | None = Field(description="The review verdict: looks_good, needs_follow_up, or None.")


class SessionList(_Answer):
    sessions: list[SessionRow]
    more: bool


class TurnSummary(_Answer):
    index: int
    prompt: str | None = Field(description="The prompt that opened the turn, when it opened with one.")
    steps: int
    first_seq: int | None = Field(description="The seq of the turn's first step (get_steps' from_seq).")


class StepCounts(_Answer):
    steps: int
    by_type: dict[str, int]
    failed: int
    flagged: int


class SessionOverview(Cited):
    id: str
    title: str
    agent: str
    agent_version: str
    workspace: str
    started_at: str
    ended_at: str | None
    model: str | None
    git_branch: str | None
    metrics: Metrics | None = Field(description="Cost, API requests and tokens, when the agent reports them.")
    turns: list[TurnSummary]
    turns_left_out: int = Field(description="Turns past the ones listed.")
    actors: list[Actor]
    counts: StepCounts


class StepsPage(Cited):
    session_id: str
    steps: list[Step] = Field(description="As `postrun export -f json` has them, texts cut to max_chars.")
    next_from_seq: int | None = Field(description="Where the next page starts (from_seq); None at the end.")
    cut_fields: int = Field(
        description="Text fields cut to max_chars (marked `… [cut: N more characters]`), and lists or nested"
        " objects of a step too big for a page cut short (marked `… [cut: N more items]` or `[cut: N more keys]`)."
    )


class FileTouch(Cited):
    session_id: str
    step_id: str
    seq: int
    at: str
    type: str = Field(description="edit, read or command.")
    outcome: str
    agent: str
    workspace: str
    command: str | None = Field(description="The command line, for a command.")
    old_text: str | None = Field(description="For an edit: the text replaced (cut).")
    new_text: str | None = Field(description="For an edit: the new text (cut).")


class FileHistory(_Answer):
    path: str
    touches: list[FileTouch] = Field(description="Newest first.")
    more: bool
    active_left_out: int
