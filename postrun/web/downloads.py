"""The review app's downloads: a session as its v1.2 JSON envelope or as Markdown.

Both are what `postrun export` gives (the Markdown redacted, the home folder shown as ``~``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from postrun.views import export_session
from postrun.web.pages import config


def _download(content: bytes, media_type: str, name: str) -> Response:
    # ASCII only: a header is Latin-1, and a store may hold any id (`é`, `日` made it a 500).
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in name)
    return Response(content, media_type=media_type, headers={"content-disposition": f'attachment; filename="{safe}"'})


def export_json(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    content = export_session(config(request).db, session_id, "json").content
    return _download(content, "application/json", f"{session_id}.json")


def export_markdown(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    settings = config(request)
    content = export_session(settings.db, session_id, "markdown", home=settings.home).content
    return _download(content, "text/markdown; charset=utf-8", f"{session_id}.md")
