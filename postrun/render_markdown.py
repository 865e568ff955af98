"""A session as a Markdown transcript in which session text stays text.

Whatever a renderer does with Markdown, nothing from the session becomes markup, a link or a
terminal control: prose is backslash-escaped (CommonMark lets any ASCII punctuation be), code
spans and fences are longer than any backtick run inside them, and control and bidi
characters are shown as escapes (``\\x1b``, ``\\u202e``). A helper's work is quoted under the
step that started it, every line of it. Flags follow their step's line, one line each, as in
``postrun show``. Pure: records in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from postrun.nesting import ROOT_ACTOR, Nesting, nest
from postrun.render import flag_lines, helper_heading, outcome_label, session_header, step_summary, turn_title
from postrun.store.query import SessionDetails
from postrun.text import one_line, visible

_ONE_LINE_CHARS = 100
_OUTPUT_CHARS = 20_000
# Always escaped: every character that opens markup, a link, raw HTML, an entity or a table.
_SPECIAL = re.compile(r"[\\`*\[\]<>&!|~#$]")
# An underscore only makes emphasis at a word's edge (``snake_case`` stays as it is).
_EDGE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# At a line's start: a list item, a setext underline or a thematic break.
_LINE_START = re.compile(r"^([-+=])|^(\d{1,9})([.)])")
_INDENT = re.compile(r"^[ \t]+")

Step = Mapping[str, Any]


def _escaped(line: str) -> str:
    """One line of session text (no newline) as Markdown that renders as that text."""
    # Leading blanks would make a code block; no-break spaces keep the indent visible instead.
    line = _INDENT.sub(lambda match: "\u00a0" * len(match.group().replace("\t", "    ")), line)
    line = _SPECIAL.sub(lambda match: "\\" + match.group(), line)
    line = _EDGE_UNDERSCORE.sub(r"\\_", line)
    return _LINE_START.sub(_escape_marker, line)


def _escape_marker(match: re.Match[str]) -> str:
    if match.group(1):
        return f"\\{match.group(1)}"
    return f"{match.group(2)}\\{match.group(3)}"


def inline(text: str, limit: int | None = _ONE_LINE_CHARS) -> str:
    """Session text on one line of Markdown (whitespace folded, cut at ``limit``)."""
    return _escaped(one_line(text, limit))


def text_lines(text: str) -> list[str]:
    """Session text as Markdown lines, each line of it its own (a hard break between them)."""
    lines = visible(text.replace("\r\n", "\n")).split("\n")
    shown = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        # A backslash ending a line is a hard break: the next line starts a line of its own.
        shown.append(_escaped(line) + ("\\" if line.strip() and following.strip() else ""))
    return shown


def code(text: str, limit: int | None = 200) -> str:
    """A code span no backtick inside ``text`` can close."""
    shown = one_line(text, limit)
    if not shown:
        return "*(empty)*"
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown[0] in "` " or shown[-1] in "` " else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def fence(text: str, info: str = "") -> list[str]:
    """A fenced code block that no backtick run inside ``text`` can close."""
    if len(text) > _OUTPUT_CHARS:
        hidden = len(text) - _OUTPUT_CHARS
        text = text[:_OUTPUT_CHARS] + f"\n… ({hidden:,} more characters in the JSON export)"
    shown = visible(text.replace("\r\n", "\n")).rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    marks = "`" * max(3, longest + 1)
    return [marks + info, *shown.split("\n"), marks]


def _head_and_rest(step: Step) -> tuple[list[str], list[str]]:
    """The step's line (for a message, the message) and what follows its flags."""
    payload = step["payload"]
    kind = step["type"]
    status = inline(outcome_label(step))
    error = [f"Error: {inline(step['error']['message'], 300)}"] if "error" in step and kind != "message" else []
    if kind == "message":
        role = str(payload["role"])
        text = text_lines(payload["text"]) if "text" in payload else ["*(text not recorded)*"]
        if role == "user":
            return [("> " + line).rstrip() for line in text], []
        if role == "thinking":
            return ["*Thinking:*", "", *(("> " + line).rstrip() for line in text)], []
        return [f"**{inline(role.capitalize())}:**", "", *text], []
    if kind == "command":
        head = [f"**Command** {code(payload.get('command', '?'))} — {status}"]
        if "output_ref" in payload:
            head.append(f"(output continues in {code(payload['output_ref'])})")
        rest: list[str] = []
        for stream in ("stdout", "stderr"):
            if payload.get(stream):
                rest += [f"{stream}:", *fence(payload[stream], "text"), ""]
        return head, rest + error
    if kind == "edit":
        action = "Create" if payload.get("is_full_write") else "Edit"
        diff = [f"-{line}" for line in payload.get("old_string", "").splitlines()]
        diff += [f"+{line}" for line in payload.get("new_string", "").splitlines()]
        shown = [*fence("\n".join(diff), "diff"), ""] if diff else []
        return [f"**{action}** {code(payload['path'])} — {status}"], shown + error
    if kind == "read":
        return [f"**Read** {code(step_summary(step))} — {status}"], error
    return [f"**Tool** {code(payload['tool_name'])} — {status}"], error


def step_lines(step: Step) -> list[str]:
    head, rest = _head_and_rest(step)
    lines = list(head)
    flags = flag_lines(step)
    if flags:
        lines += ["", *(f"- ⚑ {_escaped(line)}" for line in flags)]
    if rest:
        lines += ["", *rest]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _quoted(lines: Sequence[str]) -> list[str]:
    """Every line in a block quote (a multi-line entry is split first)."""
    return [("> " + line).rstrip() for entry in lines for line in entry.split("\n")]


def _with_helpers(step: Step, nesting: Nesting, actors: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A step, then each helper it started, quoted, with the helpers of those inside."""
    lines = step_lines(step)
    for actor_id, steps in nesting.helpers_of(step):
        lines += ["", *_helper(actor_id, steps, nesting, actors)]
    return lines


def _helper(
    actor_id: str, steps: Sequence[Step], nesting: Nesting, actors: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    actor = actors.get(actor_id, {"id": actor_id, "type": "helper"})
    body: list[str] = []
    for index, step in enumerate(steps):
        body += [*_with_helpers(step, nesting, actors), *([""] if index + 1 < len(steps) else [])]
    return [f"↳ **{_escaped(helper_heading(actor, steps))}**", "", *_quoted(body)]


def markdown(envelope: Mapping[str, Any], details: SessionDetails) -> str:
    """The session as a readable Markdown transcript."""
    title = inline(details.title) or inline(envelope["session"]["id"])
    lines = [f"# {title}", ""]
    lines += [f"    {line}" for line in session_header(envelope, details, "")]
    actors = {str(actor["id"]): actor for actor in envelope["actors"]}
    nesting = nest(envelope["steps"])
    turns = {str(turn["id"]) for turn in envelope["turns"]}
    lead = [turn for turn in envelope["turns"] if turn.get("actor_id", ROOT_ACTOR) == ROOT_ACTOR]
    sections = [(turn_title(turn), nesting.lead.get(str(turn["id"]), [])) for turn in lead]
    sections += [("Other steps", steps) for turn_id, steps in nesting.lead.items() if turn_id not in turns]
    for heading, steps in sections:
        lines += ["", f"## {_escaped(one_line(heading))}", ""]
        for step in steps:
            lines += [*_with_helpers(step, nesting, actors), ""]
    for actor_id in nesting.unattached:
        lines += ["", *_helper(actor_id, nesting.helpers[actor_id], nesting, actors), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
