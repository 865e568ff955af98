"""Where a person looks at what recall found: the ``postrun show`` command and the review app's page."""

from __future__ import annotations

import shlex
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from postrun.errors import PostrunError
from postrun.web.address import DEFAULT_HOST, DEFAULT_PORT
from postrun.web.state import ServeState, read_state


def show_command(session_id: str) -> str:
    return f"postrun show {shlex.quote(session_id)}"


def review_url(base: str, session_id: str, seq: int | None = None) -> str:
    """The review app's page of the session (at the step ``seq`` when given)."""
    page = f"{base}s/{urllib.parse.quote(session_id, safe='')}"
    return page if seq is None else f"{page}#step-{seq}"


@dataclass(frozen=True, slots=True)
class ReviewApp:
    """Where the review app is: the running one's address, else where ``postrun serve`` would listen."""

    state_file: Path

    def base(self) -> str:
        try:
            return read_state(self.state_file).url
        except PostrunError:
            return ServeState(DEFAULT_HOST, DEFAULT_PORT, 0, "").url
