"""A session as one self-contained HTML file: no script, nothing fetched, safe to mail around.

Everything from the session is escaped; a Content-Security-Policy forbids scripts,
frames, forms, fetches and any outside resource, so even an escaping mistake could not
run code or call home. Pure: records in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from postrun.render import flag_lines, outcome_label, session_header, step_summary, steps_by_turn_of, turn_title
from postrun.store.query import SessionDetails
from postrun.text import one_line

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'; object-src 'none';"
    " frame-src 'none'; child-src 'none'; form-action 'none'; connect-src 'none'; base-uri 'none'"
)
_FIELD_CHARS = 20_000
_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
pre { background: #f5f5f7; padding: .6rem .8rem; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.step { border-left: 3px solid #d2d2d7; padding-left: .8rem; margin: 1rem 0; }
.step.flagged { border-left-color: #c9302c; }
.flag { color: #a4262c; font-weight: 600; margin: .2rem 0; }
.meta { color: #6e6e73; }
"""


def document(envelope: Mapping[str, Any], details: SessionDetails) -> str:
    """The whole session as one HTML document."""
    session = envelope["session"]
    title = one_line(details.title, 100) or session["id"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<pre class="meta">{escape(chr(10).join(session_header(envelope, details, "")))}</pre>',
    ]
    by_turn = steps_by_turn_of(envelope)
    for turn in envelope["turns"]:
        parts.append(f"<h2>{escape(turn_title(turn))}</h2>")
        parts += [_step(step) for step in by_turn.get(turn["id"], [])]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _step(step: Mapping[str, Any]) -> str:
    flagged = " flagged" if step["flags"] else ""
    lines = [
        f'<section class="step{flagged}" id="step-{step["seq"]}">',
        f"<h3>#{step['seq']} {escape(step['type'])}: {escape(step_summary(step))}"
        f' <span class="meta">[{escape(outcome_label(step))}]</span></h3>',
    ]
    lines += [f'<p class="flag">⚑ {escape(line)}</p>' for line in flag_lines(step)]
    for label, text in _texts(step):
        lines.append(f'<p class="meta">{escape(label)}</p><pre>{escape(_bounded(text))}</pre>')
    lines.append("</section>")
    return "\n".join(lines)


def _texts(step: Mapping[str, Any]) -> list[tuple[str, str]]:
    payload = step["payload"]
    kind = step["type"]
    if kind == "message":
        found = [(payload["role"], payload.get("text", "(text not recorded)"))]
    elif kind == "command":
        found = [("command", payload.get("command", "(command not recorded)"))]
        found += [(stream, payload[stream]) for stream in ("stdout", "stderr") if payload.get(stream)]
    elif kind == "edit":
        found = [(key, payload[key]) for key in ("old_string", "new_string") if payload.get(key)]
    else:
        found = []
    return found + ([("error", step["error"]["message"])] if "error" in step else [])


def _bounded(text: str) -> str:
    if len(text) <= _FIELD_CHARS:
        return text
    return text[:_FIELD_CHARS] + f"\n… ({len(text) - _FIELD_CHARS:,} more characters in the JSON export)"
