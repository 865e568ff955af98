"""Every page of the review app on a phone-sized window (390 × 844) and for assistive technology:
no page scrolls sideways, a session's title takes one or two lines, every page has a heading
and every control a label. Headless Chromium against the real `postrun serve` over the real
fixtures, the hand-made sessions and the inbox store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolated_environ
from tests.support.browser import DESKTOP, PHONE, open_signed_in, require_chromium, shot
from tests.support.web import (
    BIG_SESSION,
    HELPER_SESSION,
    HOSTILE_SESSION,
    ServeProcess,
    ingest_fixtures,
    store_hand_made,
    wait_for,
)
from tests.support.web_inbox import A, B, build_inbox_store

require_chromium()

PAGES = [
    "",
    "?page=2",
    "?agent=codex&flag=any",
    f"s/{A.id}",  # a long title, 80 steps
    f"s/{A.id}?history=1",
    f"s/{B.id}",
    f"s/{HOSTILE_SESSION}",  # a 2 MB line, hostile text
    f"s/{HELPER_SESSION}",  # a helper nested
    f"s/{BIG_SESSION}",  # turns that load when opened
    "search?q=echo",
    "search?q=" + "+".join(f"word{i}" for i in range(40)),
    "files?workspace=/home/dev/work/a_read_edit&days=3650",
    "activity?from=2026-01-01&to=2026-12-31",
    "activity",
    "?page=abc",  # a 400 page
    "s/17901000",  # an ambiguous prefix
    "s/nope",  # a 404 page
]
STATUS = {"?page=abc": 400, "s/17901000": 300, "s/nope": 404}
# A control's name, as assistive technology finds it (its label, aria-label or text).
UNNAMED_CONTROLS = """() => Array.from(document.querySelectorAll("input, select, textarea, button"))
  .filter((el) => el.type !== "hidden")
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label")
    && !el.getAttribute("aria-labelledby") && !(el.tagName === "BUTTON" && el.textContent.trim()))
  .map((el) => el.outerHTML.slice(0, 120))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("phone")
    environ = isolated_environ(tmp)
    ingest_fixtures(environ)
    store_hand_made(Path(environ["POSTRUN_DB"]))
    build_inbox_store(Path(environ["POSTRUN_DB"]))
    served = ServeProcess(environ, tmp)
    yield served
    served.kill()


def visit(watched: Any, url: str, path: str) -> None:
    """Open the page; an error page's own status is what the browser logs, nothing else."""
    answer = watched.page.goto(url + path)
    expected = STATUS.get(path, 200)
    assert answer is not None and answer.status == expected, path
    if expected != 200:
        logged = f"the server responded with a status of {expected}"
        watched.errors[:] = [error for error in watched.errors if logged not in error]


def _lines(page: Any, selector: str) -> float:
    """How many lines of text the element takes."""
    height, line = page.evaluate(
        f"""() => {{ const el = document.querySelector({selector!r});
            return [el.getBoundingClientRect().height, parseFloat(getComputedStyle(el).lineHeight)]; }}"""
    )
    return float(height) / float(line)


def test_no_page_scrolls_sideways_on_a_phone(browser: Any, server: ServeProcess) -> None:
    watched = open_signed_in(browser, server, PHONE)
    page = watched.page
    try:
        for path in PAGES:
            visit(watched, server.url, path)
            wait_for(lambda: page.locator("details[open] .loading").count() == 0, f"{path}: its bodies to load")
            width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert width[0] <= width[1], (path, width)
            top = page.locator("header.top").bounding_box()
            assert top is not None and top["width"] <= PHONE["width"], path
            shot(page, "phone-" + (re.sub(r"[^A-Za-z0-9_=-]+", "-", path)[:60].strip("-") or "inbox"))
        page.goto(f"{server.url}s/{A.id}")
        assert 0.9 <= _lines(page, "h1") <= 2.1  # a 600-character title
        page.goto(server.url)
        for link in page.locator("td.title a.open-link").all():
            box = link.bounding_box()
            assert box is not None and box["height"] <= 2.2 * 14 * 1.45, link.inner_text()
    finally:
        watched.close()


def test_every_page_has_a_heading_and_every_control_a_label(browser: Any, server: ServeProcess) -> None:
    watched = open_signed_in(browser, server, DESKTOP)
    page = watched.page
    try:
        for path in PAGES:
            visit(watched, server.url, path)
            assert page.locator("h1").count() == 1, path
            assert page.locator("h1").inner_text().strip(), path
            assert page.evaluate(UNNAMED_CONTROLS) == [], path
    finally:
        watched.close()
