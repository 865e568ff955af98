"""The Markdown and HTML exports, rendered: a CommonMark renderer (markdown-it-py) turns no session
text into markup, links or terminal control, every code block stays one block (a helper's
quoted ones too), flags follow their step's line one line each as in `show`, and the HTML
names each helper and nests its steps under the step that started it."""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt

from postrun.render import timeline
from postrun.render_html import document
from postrun.render_markdown import markdown
from postrun.store.query import SessionDetails
from tests.support.builders import command_step, message_step, session_record
from tests.support.web import HELPER_ACTOR, helper_session

DETAILS = SessionDetails("", None, None, None, None, "tests", "2026-09-21T15:00:00.000Z", "2026-09-21T15:00:00.000Z")
COMMONMARK = MarkdownIt("commonmark")
HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    "[click](javascript:alert(3))",
    "<javascript:alert(4)>",
    "[ref]: javascript:alert(5)",
    "![pic](http://203.0.113.9/x.png)",
    "*emphasis* _under_ **strong** ~~gone~~",
    "# a heading",
    "- a list",
    "1. a numbered list",
    "> a quote",
    "| a | b |",
    "|---|---|",
    "&lt;entity&gt; &amp;",
    "```",
    "~~~",
    "---",
    "    indented code",
    "bell\x07 esc\x1b[31m red \x9b31m csi \u202e reversed",
]
TEXT = "\n".join(HOSTILE)


def envelope_of(steps: list[dict[str, Any]], actors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    sid = steps[0]["session_id"]
    return {
        "session": session_record(sid),
        "segments": [
            {"index": 0, "start_reason": "start", "started_at": "2026-09-21T14:13:19.500Z", "source_files": []}
        ],
        "actors": [{"id": "root", "type": "root", "label": "lead"}, *(actors or [])],
        "turns": [
            {
                "id": "turn:1",
                "session_id": sid,
                "segment_index": 0,
                "actor_id": "root",
                "index": 1,
                "started_at": "2026-09-21T14:13:19.500Z",
                "step_ids": [],
            }
        ],
        "steps": steps,
    }


def hostile_envelope() -> dict[str, Any]:
    failed = command_step(2, f"echo `{HOSTILE[0]}` ``x``", f"{TEXT}\n", exit_code=1)
    failed["payload"]["stderr"] = f"{TEXT}\n"
    failed["error"]["message"] = TEXT
    failed["flags"] = [
        {"kind": "dangerous_command", "severity": "danger", "reason": f"rm -rf <b>{HOSTILE[2]}</b>"},
        {"kind": "failed", "severity": "info", "reason": "exit 1"},
    ]
    return envelope_of(
        [
            message_step(0, TEXT, role="user"),
            message_step(1, TEXT),
            failed,
            message_step(3, TEXT, role="thinking"),
        ]
    )


def tags(html: str) -> set[str]:
    return {match.lower() for match in re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html)}


def test_hostile_session_text_renders_as_text() -> None:
    text = markdown(hostile_envelope(), DETAILS)
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\u202e" not in text
    html = COMMONMARK.render(text)
    # Only the transcript's own markup: its headings, labels, blocks, quotes and flag list.
    assert tags(html) <= {"h1", "h2", "p", "strong", "em", "code", "pre", "blockquote", "br", "ul", "li"}
    assert "<a" not in html and "<script" not in html and "<img" not in html and "<table" not in html
    tokens = COMMONMARK.parse(text)
    assert not [token for token in tokens if token.type in ("html_block", "html_inline")]
    inline = [child for token in tokens if token.children for child in token.children]
    assert not [token for token in inline if token.type in ("link_open", "image", "html_inline", "s_open")]
    assert len([token for token in inline if token.type == "em_open"]) == 1  # the transcript's "*Thinking:*"
    # Every hostile line reaches the reader as text (control and bidi characters as escapes).
    rendered = re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    rendered = rendered.replace("&amp;", "&")
    for line in HOSTILE[:-1]:
        assert line.strip() in rendered, line
    assert "bell\\x07 esc\\x1b[31m red \\x9b31m csi \\u202e reversed" in rendered


def test_every_code_block_stays_one_block_inside_a_helpers_quote() -> None:
    mapped = helper_session()
    steps = [row.record for row in mapped.steps]
    stderr = "Traceback (most recent call last):\n  File 'x.py', line 1\n<b>not bold</b>\n```\nend of stderr\n"
    steps[3] = {**steps[3], "outcome": "failed", "payload": {**steps[3]["payload"], "stderr": stderr}}
    steps[3]["payload"]["stdout"] = "line one\nline two\n    indented\n"
    steps[4] = {**steps[4], "payload": {"role": "assistant", "text": "first line\n<i>second</i>\n\nthird"}}
    envelope = {"session": mapped.session, "segments": mapped.segments, "actors": mapped.actors,
                "turns": mapped.turns, "steps": steps}  # fmt: skip
    text = markdown(envelope, DETAILS)
    start = text.index("↳ **subagent")
    quoted = text[start:].split("\n\n", 1)[1].split("\n\n**Assistant:**")[0]
    assert all(line.startswith(">") for line in quoted.splitlines()), quoted
    blocks = [token for token in COMMONMARK.parse(text) if token.type in ("fence", "code_block")]
    contents = [token.content for token in blocks if token.type == "fence"]
    assert contents == ["line one\nline two\n    indented\n", stderr]
    html = COMMONMARK.render(text)
    assert "<b>" not in html and "<i>" not in html
    assert html.count("<blockquote>") == 2  # the prompt, and one quote for the whole of the helper's work


def test_flags_follow_their_step_one_line_each_everywhere() -> None:
    envelope = hostile_envelope()
    text = markdown(envelope, DETAILS)
    lines = text.splitlines()
    step_line = next(i for i, line in enumerate(lines) if line.startswith("**Command**"))
    flags = [i for i, line in enumerate(lines) if line.startswith("- ⚑ ")]
    assert len(flags) == 2 and step_line < flags[0] and flags == list(range(flags[0], flags[0] + 2))
    assert lines[flags[1]] == "- ⚑ info failed: exit 1"
    assert flags[-1] < lines.index("stdout:")
    items = [token for token in COMMONMARK.parse(text) if token.type == "list_item_open"]
    assert len(items) == 2
    shown = timeline(envelope, DETAILS)
    step = next(i for i, line in enumerate(shown) if line.lstrip().startswith("#2 "))
    assert [line.strip() for line in shown[step + 1 :] if line.strip().startswith("! ")][:2] == [
        f"! danger dangerous_command: rm -rf <b>{HOSTILE[2]}</b>",
        "! info failed: exit 1",
    ]
    page = document(envelope, DETAILS)
    heading = page.index("<h3>#2 ")
    assert (
        heading < page.index('<p class="flag">⚑ danger dangerous_command') < page.index('<p class="flag">⚑ info failed')
    )
    assert page.index('<p class="flag">⚑ info failed') < page.index('<p class="meta">command</p>')


def test_the_html_export_names_each_helper_and_nests_its_steps() -> None:
    mapped = helper_session()
    envelope = {"session": mapped.session, "segments": mapped.segments, "actors": mapped.actors,
                "turns": mapped.turns, "steps": [row.record for row in mapped.steps]}  # fmt: skip
    page = document(envelope, DETAILS)
    spawn = page.index('<section class="step" id="step-1">')
    helper = page.index(f'<section class="helper" data-actor="{HELPER_ACTOR}">')
    assert spawn < helper < page.index('id="step-2"') < page.index('id="step-4"') < page.index('id="step-5"')
    head = page[helper : page.index("</h4>", helper)]
    assert "subagent" in head and "config-reviewer" in head and "3 steps" in head
    # The helper's section closes before the lead's next step, inside the step that started it.
    inside = page[helper : page.index('id="step-5"')]
    assert inside.count("</section>") == 5  # the three steps, the helper, the spawning step
    text = markdown(envelope, DETAILS)
    assert text.index("**Tool** `spawn_agent`") < text.index("↳ **subagent") < text.index("> HELPER-REPLY")
    # A helper of one step: "1 step".
    envelope["steps"] = [step for step in envelope["steps"] if step["seq"] not in (3, 4)]
    page = document(envelope, DETAILS)
    helper = page.index(f'<section class="helper" data-actor="{HELPER_ACTOR}">')
    assert ">1 step<" in page[helper : page.index("</h4>", helper)]
