"""How recall shows what it found: a snippet, a turn, a helper, a file's touch, every text redacted then cut (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from postrun.recall import bounds
from postrun.recall.models import Actor, FileTouch, TurnSummary
from postrun.review.redact import Redactor
from postrun.store import codec, recall, search
from postrun.text import one_line


def shown_text(record: dict[str, Any], redactor: Redactor) -> str:
    """The texts a step is found by, as recall shows them: the record redacted whole first, as
    get_steps shows it (a secret a pair gives away, ``{"api_key": "…"}``, is masked where the
    rest of the record repeats it too), then each text, on one line."""
    shown = redactor.value(record, "snippet")
    # Each cut after it is redacted (a cut secret could escape the detector), at twice what the
    # index holds of it: a mask in the part the index holds moves the rest by less than that.
    fields = (redactor.text(field, "snippet")[: 2 * codec.SEARCH_FIELD_CHARS] for field in codec.search_fields(shown))
    return one_line("\n".join(fields))


def found_in_secret(record: dict[str, Any], shown: str, words: Sequence[str]) -> bool:
    """Whether a word the index finds in ``record`` is not in ``shown`` (its ``shown_text``): it
    was found inside a secret that recall masks, and answering with the step would confirm
    the secret was guessed right."""
    indexed = search.index_terms(codec.search_body(record))
    seen = search.index_terms(shown)
    return any(search.holds_phrase(indexed, word) and not search.holds_phrase(seen, word) for word in words)


def snippet(record: dict[str, Any], shown: str | None, words: Sequence[str], redactor: Redactor) -> str:
    """The step's ``shown`` text around the first word found, redacted whole before it is cut
    (a cut secret could escape the detector); without words, the reasons of its flags."""
    if not words or shown is None:
        text = " | ".join(f"{flag['severity']} {flag['kind']}: {flag['reason']}" for flag in record.get("flags", []))
        return bounds.cut(one_line(redactor.text(text, "flags")), bounds.SNIPPET_CHARS)
    folded = shown.casefold()
    found = [at for at in (folded.find(word.casefold()) for word in words) if at >= 0]
    start = max(0, min(found, default=0) - bounds.SNIPPET_CHARS // 3)
    window = shown[start : start + bounds.SNIPPET_CHARS]
    return ("…" if start else "") + window + ("…" if start + bounds.SNIPPET_CHARS < len(shown) else "")


def turn_summary(turn: recall.TurnFacts, redactor: Redactor) -> TurnSummary:
    first = turn.first_step or {}
    payload = first.get("payload") or {}
    text = payload.get("text") if first.get("type") == "message" and payload.get("role") == "user" else None
    prompt = None if not isinstance(text, str) else bounds.cut(redactor.text(text, "prompt"), bounds.PROMPT_CHARS)
    return TurnSummary(index=turn.index, prompt=prompt, steps=turn.steps, first_seq=turn.first_seq)


def actor(record: dict[str, Any], redactor: Redactor) -> Actor:
    """A helper as the export has it, its label cut: a Cline sub-agent's is its task's first
    line, which may be a whole pasted paragraph."""
    shown = redactor.value(record, "actor")
    if isinstance(shown.get("label"), str):
        shown["label"] = bounds.cut(one_line(shown["label"]), bounds.TITLE_CHARS)
    return Actor.model_validate(shown)


def file_touch(step: recall.FoundStep, redactor: Redactor, cite: dict[str, str]) -> FileTouch:
    payload = step.record.get("payload") or {}

    def shown(key: str, limit: int) -> str | None:
        value = payload.get(key)
        return bounds.cut(redactor.text(value, key), limit) if isinstance(value, str) else None

    return FileTouch(
        session_id=step.session_id,
        step_id=step.step_id,
        seq=step.seq,
        at=step.at,
        type=step.type,
        outcome=step.outcome,
        agent=step.agent,
        workspace=redactor.text(step.workspace, "workspace"),
        command=shown("command", bounds.COMMAND_CHARS) if step.type == "command" else None,
        old_text=shown("old_string", bounds.EDIT_CHARS) if step.type == "edit" else None,
        new_text=shown("new_string", bounds.EDIT_CHARS) if step.type == "edit" else None,
        **cite,
    )
