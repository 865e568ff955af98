"""The review app's ASGI application: routes, templates, static files, the guard in front."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from postrun.store.session_index import SessionIndex
from postrun.web import downloads, explore, failures, filters, live, pages, verdict_pages
from postrun.web.auth import Gate, allowed_hosts
from postrun.web.guard import Guard
from postrun.web.memory import BigPages


@dataclass
class WebConfig:
    db: Path
    port: int
    secret: str
    host: str = "127.0.0.1"  # the loopback address it listens on
    home: Path | None = None  # shown as ~ in downloads meant for sharing, as `postrun export` does
    clock: Callable[[], float] = time.time
    poll_seconds: float = 0.5  # how often live pages look for a change in the store
    stopping: bool = False  # set on SIGTERM/Ctrl-C: live streams end so the server can stop
    streams: int = 0
    index: SessionIndex = field(default_factory=SessionIndex)  # titles and workspaces, refreshed per request
    big_pages: BigPages = field(default_factory=BigPages)  # a few at a time, memory given back after
    cookie: str = field(init=False)

    def __post_init__(self) -> None:
        # Cookies ignore ports: one name per port keeps two servers' sign-ins apart.
        self.cookie = f"postrun_{self.port}"

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)


def templates() -> Environment:
    environment = Environment(
        loader=PackageLoader("postrun.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(filters.FILTERS)
    return environment


def create_app(config: WebConfig) -> Guard:
    gate = Gate(config.secret)
    app = Starlette(
        routes=[
            Route("/login", pages.login),
            Route("/", pages.sessions),
            Route("/verdicts", verdict_pages.bulk_verdict, methods=["POST"]),
            Route("/s/{session_id}", pages.session),
            Route("/s/{session_id}/live", pages.session_live),
            Route("/s/{session_id}/turn", pages.turn_steps),
            Route("/s/{session_id}/step", pages.step_body),
            Route("/s/{session_id}/verdict", verdict_pages.verdict, methods=["POST"]),
            Route("/s/{session_id}/export.json", downloads.export_json),
            Route("/s/{session_id}/export.md", downloads.export_markdown),
            Route("/search", explore.search),
            Route("/files", explore.files),
            Route("/activity", explore.activity),
            Route("/events", live.events),
            Mount("/static", StaticFiles(packages=[("postrun.web", "static")]), name="static"),
        ],
        exception_handlers=failures.EXCEPTION_HANDLERS,
    )
    app.state.config = config
    app.state.gate = gate
    app.state.templates = templates()
    return Guard(app, gate, allowed_hosts(config.port, config.host), config.cookie)
