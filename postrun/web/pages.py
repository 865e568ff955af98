"""The review app's pages: each parses its query, calls one read (or the verdict write), renders.

GET never changes the store. Bad query values are a 400 with one line.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from postrun.errors import NotFound, PostrunError, UsageError
from postrun.store.browse import SessionFilter
from postrun.store.query import STEP_TYPES
from postrun.store.verdicts import VERDICT_FILTERS, VERDICT_LABELS, check_verdict_filter
from postrun.views import export_session, search_steps
from postrun.web import charts, data, present
from postrun.web.auth import origin_allowed
from postrun.web.diff import cut, highlighted_diff

_log = logging.getLogger(__name__)

_FORM_BYTES = 16 * 1024
# A page answers at once even for a word in every other step: it ranks the newest matches only.
SEARCH_WINDOW = 5_000
_TRUE = ("1", "on", "true", "yes")


def _render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = request.app.state.templates.get_template(name).render(
        path=request.url.path, query=dict(request.query_params), verdict_labels=VERDICT_LABELS, **context
    )
    return HTMLResponse(html, status)


def _config(request: Request) -> Any:
    return request.app.state.config


def _day(params: Mapping[str, str], name: str) -> date | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UsageError(name, f"expected a date like 2026-11-29, got {value!r}") from None


def _utc_start(day: date) -> str:
    return f"{day.isoformat()}T00:00:00.000Z"


def _choice(params: Mapping[str, str], name: str, known: tuple[str, ...]) -> str | None:
    value = params.get(name) or None
    if value is not None and value not in known:
        raise UsageError(name, f"unknown value {value!r} (known: {', '.join(known)})")
    return value


def _page_number(params: Mapping[str, str]) -> int:
    value = params.get("page", "1")
    if not value.isdigit() or int(value) < 1:
        raise UsageError("page", f"expected a page number, got {value!r}")
    return int(value)


def login(request: Request) -> Response:
    config = _config(request)
    session = request.app.state.gate.redeem(request.query_params.get("token", ""), config.clock())
    if session is None:
        return PlainTextResponse("login link invalid, used or expired: run `postrun open` for a new one\n", 401)
    response = RedirectResponse("/", 303)
    response.set_cookie(config.cookie, session, httponly=True, samesite="strict", path="/")
    return response


def sessions_filter(params: Mapping[str, str]) -> SessionFilter:
    since, until = _day(params, "from"), _day(params, "to")
    return SessionFilter(
        text=params.get("q", "").strip() or None,
        workspace=params.get("workspace") or None,
        state=_choice(params, "state", ("open", "ended")),
        failed=params.get("failed", "") in _TRUE,
        flagged=params.get("flagged", "") in _TRUE,
        since_utc=_utc_start(since) if since else None,
        until_utc=_utc_start(until + timedelta(days=1)) if until else None,
        verdict=check_verdict_filter(params.get("verdict") or None),
        page=_page_number(params),
    )


def sessions(request: Request) -> Response:
    query = sessions_filter(request.query_params)
    config = _config(request)
    page, roots = data.sessions_page(config.db, query, config.index)
    params = {key: value for key, value in request.query_params.items() if key not in ("page", "fragment") and value}

    def page_link(number: int) -> str:
        return "/?" + urllib.parse.urlencode({**params, "page": number})

    context: dict[str, Any] = {
        "page": page,
        "filter": query,
        "workspaces": roots,
        "verdicts": VERDICT_FILTERS,
        "previous": page_link(query.page - 1) if query.page > 1 else None,
        "next": page_link(query.page + 1) if page.has_more else None,
        "live_src": "/?" + urllib.parse.urlencode({**params, "page": query.page, "fragment": "1"}),
    }
    if request.query_params.get("fragment"):
        return _render(request, "_session_rows.html", **context)
    return _render(request, "sessions.html", **context)


def _session_context(request: Request) -> dict[str, Any]:
    session_id = request.path_params["session_id"]
    with_history = request.query_params.get("history", "") in _TRUE
    stored = data.stored_session(_config(request).db, session_id, with_history=with_history)
    envelope = stored.envelope
    return {
        "session": envelope["session"],
        "envelope": envelope,
        "details": stored.details,
        "view": present.session_view(envelope, stored.history),
        "verdicts": stored.verdicts,
        "with_history": with_history,
        "counts": _counts(envelope["steps"]),
    }


def _counts(steps: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "steps": len(steps),
        "failed": sum(1 for step in steps if step["outcome"] == "failed"),
        "flagged": sum(1 for step in steps if step.get("flags")),
    }


def session(request: Request) -> Response:
    context = _session_context(request)
    session_id = context["session"]["id"]
    context["csrf"] = request.app.state.gate.csrf(request.state.session)
    live_query = "?history=1" if context["with_history"] else ""
    context["live_src"] = f"/s/{urllib.parse.quote(session_id, safe='')}/live{live_query}"
    context["events_src"] = "/events?" + urllib.parse.urlencode({"session": session_id})
    return _render(request, "session.html", **context)


def session_live(request: Request) -> Response:
    return _render(request, "_session_live.html", **_session_context(request))


def turn_steps(request: Request) -> Response:
    """The steps of one turn of a big session, loaded when the reader opens it."""
    context = _session_context(request)
    wanted = request.query_params.get("id", "")
    turn = next((turn for turn in context["view"].turns if turn.id == wanted), None)
    if turn is None:
        raise NotFound("", f"no turn {wanted} in session {context['session']['id']}")
    return _render(request, "_turn.html", turn=turn, session_id=context["session"]["id"])


def step_body(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    step = data.stored_step(_config(request).db, session_id, request.query_params.get("id", ""))
    payload = step["payload"]
    context: dict[str, Any] = {"step": step, "payload": payload}
    if step["type"] == "edit":
        context["diff"], context["diff_hidden"] = highlighted_diff(payload)
    streams = []
    for name in ("stdout", "stderr"):
        if payload.get(name):
            streams.append((name, *cut(payload[name])))
    if step["type"] == "message" and payload.get("text") is not None:
        streams.append((payload["role"], *cut(payload["text"])))
    if step["type"] == "other":
        streams.append(
            ("tool input and result", *cut(orjson.dumps(payload["raw"], option=orjson.OPT_INDENT_2).decode()))
        )
    context["streams"] = streams
    return _render(request, "_step_body.html", **context)


def _form(body: bytes) -> dict[str, str]:
    if len(body) > _FORM_BYTES:
        raise UsageError("note", "the form is too large")
    parsed = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {key: values[-1] for key, values in parsed.items()}


async def verdict(request: Request) -> Response:
    config = _config(request)
    hosts = {request.headers.get("host", "")}
    if not origin_allowed(request.headers.get("origin"), hosts, request.headers.get("sec-fetch-site")):
        return PlainTextResponse("forbidden: cross-origin form\n", 403)
    form = _form(await request.body())
    if not request.app.state.gate.csrf_ok(request.state.session, form.get("csrf")):
        return PlainTextResponse("forbidden: stale form, reload the page\n", 403)
    session_id = request.path_params["session_id"]
    await run_in_threadpool(
        data.save_verdict, config.db, session_id, form.get("state", ""), form.get("note", ""), now=config.now()
    )
    return RedirectResponse(f"/s/{urllib.parse.quote(session_id, safe='')}#verdict", 303)


def _download(content: bytes, media_type: str, name: str) -> Response:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return Response(content, media_type=media_type, headers={"content-disposition": f'attachment; filename="{safe}"'})


def export_json(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    content = export_session(_config(request).db, session_id, "json").content
    return _download(content, "application/json", f"{session_id}.json")


def export_markdown(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    config = _config(request)
    content = export_session(config.db, session_id, "markdown", home=config.home).content
    return _download(content, "text/markdown; charset=utf-8", f"{session_id}.md")


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A search snippet as (text, matched) pieces; matches are marked »like this«."""
    parts: list[tuple[str, bool]] = []
    for i, piece in enumerate(snippet.replace("«", "»").split("»")):
        if piece:
            parts.append((piece, i % 2 == 1))
    return parts


def search(request: Request) -> Response:
    params = request.query_params
    text = params.get("q", "").strip()
    step_type = _choice(params, "type", STEP_TYPES)
    failed = params.get("failed", "") in _TRUE
    hits = (
        search_steps(_config(request).db, text, step_type=step_type, failed=failed, window=SEARCH_WINDOW)
        if text
        else []
    )
    results = [(hit, snippet_parts(hit.snippet)) for hit in hits]
    return _render(
        request,
        "search.html",
        text=text,
        step_type=step_type,
        failed=failed,
        results=results,
        step_types=STEP_TYPES,
        window=SEARCH_WINDOW,
    )


def files(request: Request) -> Response:
    params = request.query_params
    days = params.get("days", "7")
    if not days.isdigit() or not 1 <= int(days) <= 3650:
        raise UsageError("days", f"expected a number of days, got {days!r}")
    config = _config(request)
    since = config.now().date() - timedelta(days=int(days) - 1)
    workspace = params.get("workspace") or None
    edits, roots = data.edited_files(config.db, workspace, config.index, since_utc=_utc_start(since))
    if workspace is None and roots:
        return RedirectResponse("/files?" + urllib.parse.urlencode({"workspace": roots[0], "days": days}), 303)
    by_path: dict[str, list[Any]] = {}
    for edit in edits:
        by_path.setdefault(str(edit.step["payload"]["path"]), []).append(edit)
    return _render(request, "files.html", workspace=workspace, workspaces=roots, days=days, by_path=by_path)


def activity(request: Request) -> Response:
    params = request.query_params
    config = _config(request)
    until = _day(params, "to") or config.now().date()
    since = _day(params, "from") or until - timedelta(days=29)
    if since > until:
        raise UsageError("from", "the range starts after it ends")
    workspace = params.get("workspace") or None
    days, roots = data.activity(
        config.db,
        config.index,
        since_utc=_utc_start(since),
        until_utc=_utc_start(until + timedelta(days=1)),
        workspace=workspace,
    )
    return _render(
        request,
        "activity.html",
        charts=charts.activity_charts(days, since, until),
        since=since,
        until=until,
        workspace=workspace,
        workspaces=roots,
    )


def _bad_request(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"bad request: {exc}\n", 400)


def _not_found(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"not found: {exc}\n", 404)


def _failed(request: Request, exc: Exception) -> Response:
    # The page shows the one line; serve's log keeps it too, with the route it failed on.
    _log.error("%s %s: %s", request.method, request.url.path, exc)
    return PlainTextResponse(f"error: {exc}\n", 500)


def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return PlainTextResponse(f"{exc.detail}\n", exc.status_code)


EXCEPTION_HANDLERS: dict[Any, Any] = {
    UsageError: _bad_request,
    NotFound: _not_found,
    PostrunError: _failed,
    HTTPException: _http,
}
