"""A session as one self-contained HTML file: no script, nothing fetched, safe to mail around.

Everything from the session is escaped; a Content-Security-Policy forbids scripts,
frames, forms, fetches and any outside resource, so even an escaping mistake could not
run code or call home. Pure: records in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from postrun.nesting import ROOT_ACTOR, Nesting, actor_label, nest
from postrun.render import flag_lines, outcome_label, session_header, step_summary, turn_title
from postrun.store.query import SessionDetails
from postrun.text import one_line, plural, visible

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
.helper { border-left: 2px solid #3b5bdb; margin: .6rem 0 .6rem 1.2rem; padding-left: .8rem; }
.helper > h4 { margin: .2rem 0; font-size: .95rem; }
.actor-kind { text-transform: uppercase; font-size: .75rem; letter-spacing: .06em; color: #3b5bdb; }
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
        f"<title>{_text(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_text(title)}</h1>",
        f'<pre class="meta">{_text(chr(10).join(session_header(envelope, details, "")))}</pre>',
    ]
    actors = {str(actor["id"]): actor for actor in envelope["actors"]}
    nesting = nest(envelope["steps"])
    known = {str(turn["id"]) for turn in envelope["turns"]}
    for turn in envelope["turns"]:
        if turn.get("actor_id", ROOT_ACTOR) == ROOT_ACTOR:
            parts.append(f"<h2>{_text(turn_title(turn))}</h2>")
            parts += [_step(step, nesting, actors) for step in nesting.lead.get(str(turn["id"]), [])]
    for turn_id, steps in nesting.lead.items():
        if turn_id not in known:
            parts.append("<h2>Other steps</h2>")
            parts += [_step(step, nesting, actors) for step in steps]
    parts += [_helper(actor_id, nesting, actors) for actor_id in nesting.unattached]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _text(text: str) -> str:
    """Session text as HTML text: escaped, its control and bidi characters shown as escapes."""
    return escape(visible(text))


def _step(step: Mapping[str, Any], nesting: Nesting, actors: Mapping[str, Mapping[str, Any]]) -> str:
    flagged = " flagged" if step["flags"] else ""
    lines = [
        f'<section class="step{flagged}" id="step-{step["seq"]}">',
        f"<h3>#{step['seq']} {_text(step['type'])}: {_text(step_summary(step))}"
        f' <span class="meta">[{_text(outcome_label(step))}]</span></h3>',
    ]
    lines += [f'<p class="flag">⚑ {_text(line)}</p>' for line in flag_lines(step)]
    for label, text in _texts(step):
        lines.append(f'<p class="meta">{_text(label)}</p><pre>{_text(_bounded(text))}</pre>')
    lines += [_helper(actor_id, nesting, actors) for actor_id, _ in nesting.helpers_of(step)]
    lines.append("</section>")
    return "\n".join(lines)


def _helper(actor_id: str, nesting: Nesting, actors: Mapping[str, Mapping[str, Any]]) -> str:
    """A helper's steps under a heading that names it, as the review app shows them."""
    kind, label = actor_label(actor_id, actors)
    steps = nesting.helpers[actor_id]
    head = (
        f'<section class="helper" data-actor="{_text(actor_id)}"><h4>↳ <span class="actor-kind">{_text(kind)}</span>'
        f' {_text(one_line(label, 120))} <span class="meta">{plural(len(steps), "step")}</span></h4>'
    )
    return "\n".join([head, *(_step(step, nesting, actors) for step in steps), "</section>"])


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
