"""Headless Chromium (Debian's) driven by Playwright, for the review app's browser tests.

``open_signed_in`` opens a page signed in to a running `postrun serve`, recording console
errors, page errors, 5xx answers and any request to another origin (which it aborts).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import REPO
from tests.support.web import CHROMIUM, CHROMIUM_ARGS, ServeProcess

ARTIFACTS = REPO / "tests" / "artifacts" / "web"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def require_chromium() -> None:
    """Skip the module without Chromium, except in CI, which must run it."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{CHROMIUM} is missing: CI must run the browser tests (.ci/run installs chromium)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); CI runs these", allow_module_level=True)


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watched:
    """A page whose console errors, page errors and off-origin requests are recorded."""

    page: Any
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def close(self) -> None:
        """Close the page's context and fail on anything it recorded."""
        self.page.context.close()
        assert self.errors == [], self.errors
        assert self.outside == [], self.outside


def open_signed_in(browser: Any, server: ServeProcess, viewport: dict[str, int] | None = None) -> Watched:
    context = browser.new_context(viewport=viewport or DESKTOP)
    page = context.new_page()
    watched = Watched(page)
    page.on("console", lambda message: watched.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.on(
        "response",
        lambda answer: watched.errors.append(f"{answer.status} {answer.url}") if answer.status >= 500 else None,
    )

    def guard(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            watched.outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page.goto(server.login_url())
    assert page.url == server.url
    return watched


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # Written here, not by Playwright (whose file writes start a thread that outlives the test).
    (ARTIFACTS / f"{name}.png").write_bytes(page.screenshot(full_page=True))
