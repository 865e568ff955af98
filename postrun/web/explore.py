"""The review app's pages across sessions: search, the files edited in a workspace, activity.

Each is bounded before it reads: search by its number of terms and a window of the newest
matches, files and activity by a range of at most ten years (files a page at a time).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from postrun.errors import UsageError
from postrun.store.activity import EDITS_PAGE
from postrun.store.search import STEP_TYPES, bounded_words
from postrun.views import search_steps
from postrun.web import charts, data, params
from postrun.web.pages import config, render

# A page answers at once even for a word in every other step: it ranks the newest matches only,
SEARCH_WINDOW = 5_000
# and searches for this many index terms at most (each costs a pass over the steps that hold it).
SEARCH_TERMS = 8


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A search snippet as (text, matched) pieces; matches are marked »like this«."""
    parts: list[tuple[str, bool]] = []
    for i, piece in enumerate(snippet.replace("«", "»").split("»")):
        if piece:
            parts.append((piece, i % 2 == 1))
    return parts


def search(request: Request) -> Response:
    with config(request).big_pages.building():
        return _search(request)


def _search(request: Request) -> Response:
    query = request.query_params
    asked = query.get("q", "").strip()
    text, left_out = bounded_words(asked[:2000], SEARCH_TERMS)
    step_type = params.choice(query, "type", STEP_TYPES)
    failed = params.checked(query, "failed")
    settings = config(request)
    hits = search_steps(settings.db, text, step_type=step_type, failed=failed, window=SEARCH_WINDOW) if text else []
    results = [(hit, snippet_parts(hit.snippet), settings.index.agent_of(hit.session_id)) for hit in hits]
    return render(
        request,
        "search.html",
        text=asked,
        searched=text,
        left_out=left_out,
        terms=SEARCH_TERMS,
        step_type=step_type,
        failed=failed,
        results=results,
        step_types=STEP_TYPES,
        window=SEARCH_WINDOW,
    )


def _page_links(query: Mapping[str, str], page: int, pages: int, path: str) -> dict[str, str | None]:
    kept = {key: value for key, value in query.items() if key != "page" and value}

    def link(number: int) -> str:
        return f"{path}?" + urllib.parse.urlencode({**kept, "page": number})

    return {"previous": link(page - 1) if page > 1 else None, "next": link(page + 1) if page < pages else None}


def files(request: Request) -> Response:
    with config(request).big_pages.building():
        return _files(request)


def _files(request: Request) -> Response:
    query = request.query_params
    days = params.number(query, "days", 7, low=1, high=params.MAX_DAYS, what="a number of days")
    page = params.page_number(query)
    settings = config(request)
    since = params.days_before(settings.now().date(), days - 1)
    workspace = query.get("workspace") or None
    found, roots = data.edited_files(
        settings.db, workspace, settings.index, since_utc=params.utc_start(since), page=page
    )
    if workspace is None and roots:
        return RedirectResponse("/files?" + urllib.parse.urlencode({"workspace": roots[0], "days": days}), 303)
    pages = max(1, -(-found.total // EDITS_PAGE))
    if page > pages:
        raise UsageError("page", f"page {page:,} is past the last page ({pages:,})")
    by_path: dict[str, list[Any]] = {}
    for edit in found.edits:
        by_path.setdefault(str(edit.step["payload"]["path"]), []).append(edit)
    return render(
        request,
        "files.html",
        workspace=workspace,
        workspaces=roots,
        days=days,
        by_path=by_path,
        found=found,
        page=page,
        pages=pages,
        agent_of=settings.index.agent_of,
        links=_page_links(query, page, pages, "/files"),
    )


def activity(request: Request) -> Response:
    with config(request).big_pages.building():
        return _activity(request)


def _activity(request: Request) -> Response:
    query = request.query_params
    settings = config(request)
    since, until = params.day_range(query, settings.now().date(), default_days=30)
    workspace = query.get("workspace") or None
    days, roots = data.activity(
        settings.db,
        settings.index,
        since_utc=params.utc_start(since),
        until_utc=params.utc_end(until),
        workspace=workspace,
    )
    return render(
        request,
        "activity.html",
        charts=charts.activity_charts(days, since, until),
        since=since,
        until=until,
        workspace=workspace,
        workspaces=roots,
        max_days=params.MAX_DAYS,
    )
