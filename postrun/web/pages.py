"""The review app's reading pages: the sessions list (the review inbox first), a session, its parts.

Each parses its query (``postrun.web.params``), calls one read, renders. GET never changes
the store. Bad query values are a 400 page with the reason.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from postrun.errors import NotFound, UsageError
from postrun.store.verdicts import VERDICT_FILTERS, VERDICT_LABELS
from postrun.text import revealed
from postrun.web import data, params
from postrun.web.diff import cut, highlighted_diff

# Query parameters that say what just happened, not what to show: never carried into links.
_MOMENTARY = ("page", "fragment", "saved")


def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = request.app.state.templates.get_template(name).render(
        path=request.url.path, query=dict(request.query_params), verdict_labels=VERDICT_LABELS, **context
    )
    # The templates hold no bidi control or invisible character: any left (one the templates do
    # not mark, as a form's value) came from a session, shown as an escape.
    return HTMLResponse(revealed(html), status)


def config(request: Request) -> Any:
    return request.app.state.config


def login(request: Request) -> Response:
    settings = config(request)
    session = request.app.state.gate.redeem(request.query_params.get("token", ""), settings.clock())
    if session is None:
        return PlainTextResponse("login link invalid, used or expired: run `postrun open` for a new one\n", 401)
    response = RedirectResponse("/", 303)
    response.set_cookie(settings.cookie, session, httponly=True, samesite="strict", path="/")
    return response


def _saved(request: Request) -> tuple[str, int] | None:
    """What the last bulk verdict saved (``saved=<state>.<count>``), for its confirmation."""
    state, _, count = request.query_params.get("saved", "").partition(".")
    return (state, int(count)) if state in VERDICT_LABELS and count.isdigit() and len(count) < 6 else None


def sessions(request: Request) -> Response:
    settings = config(request)
    agents = data.agent_kinds(settings.index)
    if request.query_params.get("agent", "") not in ("", *agents):
        agents = data.known_agents(settings.db, settings.index)  # one stored since the last request?
    query = params.sessions_filter(request.query_params, agents)
    listing = data.sessions_page(settings.db, query, settings.index)
    page = listing.page
    if query.page > page.pages:
        raise UsageError("page", f"page {query.page:,} is past the last page ({page.pages:,})")
    kept = {key: value for key, value in request.query_params.items() if key not in _MOMENTARY and value}

    def link(**changes: Any) -> str:
        merged = {**kept, **changes}
        return "/?" + urllib.parse.urlencode({key: value for key, value in merged.items() if value})

    context: dict[str, Any] = {
        "page": page,
        "inbox": listing.inbox,
        "filter": query,
        "workspaces": listing.workspaces,
        "agents": listing.agents,
        "flag_kinds": params.FLAG_FILTERS,
        "verdicts": VERDICT_FILTERS,
        "kept": kept,
        "link": link,
        "previous": link(page=query.page - 1) if query.page > 1 else None,
        "next": link(page=query.page + 1) if page.has_more else None,
        "live_src": link(page=query.page, fragment="1"),
        "back": request.url.path + ("?" + request.url.query if request.url.query else ""),
        "saved": _saved(request),
        "csrf": request.app.state.gate.csrf(request.state.session),
    }
    if request.query_params.get("fragment"):
        return render(request, "_sessions_live.html", **context)
    return render(request, "sessions.html", **context)


def _session_context(request: Request) -> dict[str, Any]:
    session_id = request.path_params["session_id"]
    with_history = params.checked(request.query_params, "history")
    stored = data.stored_session(config(request).db, session_id, with_history=with_history)
    return {
        "session": stored.session,
        "details": stored.details,
        "view": stored.view,
        "segments": stored.segments,
        "verdicts": stored.verdicts,
        "with_history": with_history,
    }


def session(request: Request) -> Response:
    with config(request).big_pages.building():
        return _session_page(request)


def _session_page(request: Request) -> Response:
    context = _session_context(request)
    session_id = context["session"]["id"]
    context["csrf"] = request.app.state.gate.csrf(request.state.session)
    context["saved"] = params.checked(request.query_params, "saved") and bool(context["verdicts"])
    live_query = "?history=1" if context["with_history"] else ""
    context["live_src"] = f"/s/{urllib.parse.quote(session_id, safe='')}/live{live_query}"
    context["events_src"] = "/events?" + urllib.parse.urlencode({"session": session_id})
    return render(request, "session.html", **context)


def session_live(request: Request) -> Response:
    with config(request).big_pages.building():
        return render(request, "_session_live.html", **_session_context(request))


def turn_steps(request: Request) -> Response:
    """The steps of one turn of a big session (``from``/``to``: one part of it), loaded when the
    reader opens it."""
    session_id = request.path_params["session_id"]
    wanted = request.query_params.get("id", "")
    seqs = params.seq_range(request.query_params)
    with config(request).big_pages.building():
        view = data.stored_turn(config(request).db, session_id, wanted, seqs)
        turn = next((turn for turn in view.turns if turn.id == wanted), None)
        if turn is None:
            raise NotFound("", f"no turn {wanted[:100]} in session {session_id}")
        return render(request, "_turn.html", turn=turn, session_id=session_id)


def step_body(request: Request) -> Response:
    with config(request).big_pages.building():
        return _step_body(request)


def _step_body(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    step = data.stored_step(config(request).db, session_id, request.query_params.get("id", ""))
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
    return render(request, "_step_body.html", **context)
