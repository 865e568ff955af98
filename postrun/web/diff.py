"""Step bodies as HTML-safe pieces: an edit as a highlighted unified diff, long text cut to size.

Pygments escapes what it highlights; everything else goes through Jinja's autoescape.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from postrun.text import controls_shown
from postrun.web.filters import marked

BODY_CHARS = 200_000  # per text shown; the JSON export has the rest
_FORMATTER = HtmlFormatter(cssclass="diff", wrapcode=True)


def cut(text: str, limit: int = BODY_CHARS) -> tuple[str, int]:
    """``text`` up to ``limit`` characters, and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def edit_diff(payload: Mapping[str, Any]) -> str:
    """The edit as a unified diff (3 lines of context), ``old_string`` to ``new_string``."""
    path = str(payload["path"])
    old = str(payload.get("old_string", "")).splitlines()
    new = str(payload.get("new_string", "")).splitlines()
    shown = path if path.startswith("/") else f"/{path}"
    before = "/dev/null" if payload.get("is_full_write") and not old else f"a{shown}"
    lines = difflib.unified_diff(old, new, fromfile=before, tofile=f"b{shown}", n=3, lineterm="")
    return "\n".join(lines) + "\n"


def highlighted_diff(payload: Mapping[str, Any]) -> tuple[Markup, int]:
    text, hidden = cut(controls_shown(edit_diff(payload)))
    # Pygments' HTML formatter escapes every token: the result is safe markup, its bidi controls
    # and invisible characters then marked as the rest of the page marks them.
    return marked(highlight(text, DiffLexer(), _FORMATTER)), hidden
