"""The review app's only writes: a verdict on one session, or one verdict for many (bulk).

Both are POSTs checked for their origin and a CSRF token bound to the browser's session;
every verdict is added to the session's history, none replaced.
"""

from __future__ import annotations

import urllib.parse

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from postrun.errors import UsageError
from postrun.web import data
from postrun.web.auth import origin_allowed
from postrun.web.pages import config

_FORM_BYTES = 64 * 1024  # a note, and the ids of a few pages of sessions


async def _checked_form(request: Request) -> tuple[dict[str, list[str]], Response | None]:
    """The POSTed form, or the 403 to answer instead (cross-origin, or a stale CSRF token)."""
    hosts = {request.headers.get("host", "")}
    if not origin_allowed(request.headers.get("origin"), hosts, request.headers.get("sec-fetch-site")):
        return {}, PlainTextResponse("forbidden: cross-origin form\n", 403)
    body = await request.body()
    if len(body) > _FORM_BYTES:
        raise UsageError("form", f"the form is too large ({len(body):,} bytes, at most {_FORM_BYTES:,})")
    form = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    token = _last(form, "csrf") or None
    if not request.app.state.gate.csrf_ok(request.state.session, token):
        return {}, PlainTextResponse("forbidden: stale form, reload the page\n", 403)
    return form, None


def _last(form: dict[str, list[str]], name: str) -> str:
    return (form.get(name) or [""])[-1]


async def verdict(request: Request) -> Response:
    form, refused = await _checked_form(request)
    if refused is not None:
        return refused
    settings = config(request)
    session_id = request.path_params["session_id"]
    await run_in_threadpool(
        data.save_verdicts, settings.db, [session_id], _last(form, "state"), _last(form, "note"), now=settings.now()
    )
    return RedirectResponse(f"/s/{urllib.parse.quote(session_id, safe='')}?saved=1#verdict", 303)


def _back(target: str, saved: str) -> str:
    """The sessions list the form was on (its own path only), saying what was saved."""
    parsed = urllib.parse.urlsplit(target)
    if parsed.scheme or parsed.netloc or parsed.path != "/":
        parsed = urllib.parse.urlsplit("/")
    query = [(key, value) for key, value in urllib.parse.parse_qsl(parsed.query) if key not in ("saved", "fragment")]
    return "/?" + urllib.parse.urlencode([*query, ("saved", saved)]) + "#inbox"


async def bulk_verdict(request: Request) -> Response:
    """One verdict and note for every session chosen on the list, all in one transaction."""
    form, refused = await _checked_form(request)
    if refused is not None:
        return refused
    settings = config(request)
    chosen = form.get("session", [])
    state = _last(form, "state")
    saved = await run_in_threadpool(
        data.save_verdicts, settings.db, chosen, state, _last(form, "note"), now=settings.now()
    )
    return RedirectResponse(_back(_last(form, "back"), f"{state}.{len(saved)}"), 303)
