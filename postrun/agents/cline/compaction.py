"""The compaction sidecar's summary, recorded once as a ``system`` message of the lead.

The sidecar (``<id>.compaction.json``) holds Cline's compacted working view; the messages
file keeps the full history, so the sidecar is no source of steps. Its summary (the first
message, ``metadata.kind = "compaction_summary"``) is what the model was left with: one
step, placed where the compaction happened, after the ``source_message_count`` messages
it folded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from postrun.agents.cline.steps import Context, SessionFacts, system_message
from postrun.agents.cline.transcript import Transcript, escape_id
from postrun.records import StepRow
from postrun.timestamps import epoch_ms

SUMMARY_KIND = "compaction_summary"


def summary_step(
    document: Any,
    transcript: Transcript,
    before: Sequence[tuple[int, str, int, int | str]],
    facts: SessionFacts,
) -> tuple[int, StepRow] | None:
    """(where among the lead's steps, the summary step), or None without a summary.

    ``before`` holds, per lead message and then after the last, (steps so far, the open
    turn, its segment, the time).
    """
    messages = document.get("messages") if isinstance(document, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else None
    metadata = first.get("metadata") if isinstance(first, dict) else None
    if not isinstance(metadata, dict) or metadata.get("kind") != SUMMARY_KIND:
        return None
    assert isinstance(first, dict)
    content = first.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    texts = [
        block["text"]
        for block in (blocks if isinstance(blocks, list) else ())
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    if not texts:
        return None
    folded = document.get("source_message_count")
    count = folded if type(folded) is int and folded >= 0 else len(transcript.raw_messages)
    # The first lead message the compaction did not fold; else after the last one.
    index = next((m.number for m in transcript.messages if m.position >= count), len(transcript.messages))
    rows, turn_id, segment, at = before[index]
    at = epoch_ms(first.get("ts")) or at  # when it was compacted, when Cline says
    message_id = first.get("id")
    key = escape_id(message_id) if isinstance(message_id, str) and message_id else ""
    context = Context(rows, turn_id, segment, 0, 0, at, key, (), (), ())
    return rows, system_message(f"compaction:{key}#0", "\n\n".join(texts), context, facts)
