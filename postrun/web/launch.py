"""Opening a browser signed in, without the login link on its command line.

A browser is started with the address it opens as an argument, which any local user can read
(``ps``, ``/proc/<pid>/cmdline``) while the browser runs: a login link there would sign them in.
As Jupyter does, the browser is given a local page instead, written 0600 in the private state
folder, that sends it on to the link. The page holds a link valid once and for 60 s; pages of
links no longer valid are removed the next time one is written, and when the server stops.
"""

from __future__ import annotations

import contextlib
import html
import secrets
import time
from pathlib import Path

from postrun.errors import PostrunError
from postrun.paths import ensure_private_dir, write_private_file
from postrun.web.auth import LOGIN_TOKEN_SECONDS

_PREFIX = "open-"
_SUFFIX = ".html"


def redirect_page(url: str) -> str:
    """A page that sends the browser on to ``url`` (a refresh, and a link for a browser that
    follows none), and keeps it out of the referrer."""
    shown = html.escape(url, quote=True)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        '<meta name="referrer" content="no-referrer">'
        f'<meta http-equiv="refresh" content="0;url={shown}">'
        "<title>Postrun</title></head>\n"
        f'<body><p><a href="{shown}">Open the Postrun review app</a></p></body></html>\n'
    )


def write_redirect(folder: Path, url: str, now: float | None = None) -> Path:
    """A new private page in ``folder`` that sends a browser on to ``url``; older pages whose
    link can no longer be used are removed first."""
    try:
        ensure_private_dir(folder)
    except OSError as exc:
        raise PostrunError(str(folder), f"cannot create the state folder ({exc.strerror or exc})") from None
    remove_redirects(folder, older_than=LOGIN_TOKEN_SECONDS, now=now)
    page = folder / f"{_PREFIX}{secrets.token_hex(8)}{_SUFFIX}"
    write_private_file(page, redirect_page(url).encode())
    return page


def remove_redirects(folder: Path, *, older_than: float = 0, now: float | None = None) -> None:
    """Remove the redirect pages in ``folder`` written more than ``older_than`` seconds ago."""
    limit = (time.time() if now is None else now) - older_than
    with contextlib.suppress(OSError):
        for page in folder.glob(f"{_PREFIX}*{_SUFFIX}"):
            with contextlib.suppress(OSError):
                if page.stat().st_mtime <= limit:
                    page.unlink()
