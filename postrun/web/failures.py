"""What a request that cannot be answered gets: a page with a heading and the reason, never a trace.

A bad parameter is a 400, a missing session or step a 404, an id prefix of several sessions
a page listing them (300), a store that fails a 500 (its one line in serve's log too).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from postrun.errors import NotFound, PostrunError, UsageError
from postrun.store.query import AmbiguousSession
from postrun.web.pages import render

_log = logging.getLogger(__name__)


def _page(request: Request, status: int, title: str, reason: str) -> Response:
    return render(request, "error.html", status, title=title, reason=reason, status_code=status)


def _bad_request(request: Request, exc: Exception) -> Response:
    return _page(request, 400, "Bad request", f"bad request: {exc}")


def _not_found(request: Request, exc: Exception) -> Response:
    return _page(request, 404, "Not found", f"not found: {exc}")


def _ambiguous(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AmbiguousSession)
    return render(request, "ambiguous.html", 300, reference=exc.reference, candidates=exc.candidates, more=exc.more)


def _failed(request: Request, exc: Exception) -> Response:
    # The page shows the one line; serve's log keeps it too, with the route it failed on.
    _log.error("%s %s: %s", request.method, request.url.path, exc)
    return _page(request, 500, "Error", f"error: {exc}")


def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _page(request, exc.status_code, str(exc.detail), f"{exc.detail}: {request.url.path}")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    UsageError: _bad_request,
    NotFound: _not_found,
    AmbiguousSession: _ambiguous,
    PostrunError: _failed,
    HTTPException: _http,
}
