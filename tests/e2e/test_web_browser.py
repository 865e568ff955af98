"""End to end in a real browser: headless Chromium (Debian's) driven by Playwright, against the
real `postrun serve` over a store ingested from the real fixtures (plus the hand-made helper
and hostile sessions). Each page is saved as a screenshot under tests/artifacts/web/.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from postrun.store.db import Database
from postrun.store.write import upsert_session
from postrun.web.present import TURN_PART_STEPS
from tests.conftest import isolated_environ
from tests.support.browser import Watched, open_signed_in, require_chromium, shot
from tests.support.capture_process import CaptureProcess, copy_data, write_in_place
from tests.support.web import (
    BIG_SESSION,
    BIG_STEPS_PER_TURN,
    BIG_TURNS,
    CANARY,
    HELPER_ACTOR,
    HELPER_SESSION,
    HOSTILE,
    HOSTILE_SESSION,
    LONG_TURN_SESSION,
    LONG_TURN_STEPS,
    ServeProcess,
    ingest_fixtures,
    long_turn_session,
    store_hand_made,
    wait_for,
)

require_chromium()

BASIC = "1790000000000_basic"
REAL_A = "1795976499744_q4jun"
REAL_H = "1795976749765_vx695"  # cline-real/h_subagents: two sub-agents


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("web")
    environ = isolated_environ(tmp)
    ingest_fixtures(environ)
    store_hand_made(Path(environ["POSTRUN_DB"]))
    served = ServeProcess(environ, tmp)
    yield served
    served.kill()


def test_list_filter_and_keyboard(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(server.url + "?order=newest")
    rows = page.locator("table.sessions tbody tr")
    assert rows.count() >= 10
    assert rows.first.get_attribute("data-session") == "1795976749765_vx695"  # newest first
    shot(page, "sessions")
    page.fill("form.filters input[name=q]", "date test")
    page.check("form.filters input[name=failed]")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"q=date\+test.*failed=1"))
    assert [rows.nth(i).get_attribute("data-session") for i in range(rows.count())] == [BASIC]
    page.goto(server.url + "?state=open")
    assert "1790000100000_plans" in page.inner_text("table.sessions")
    page.goto(server.url + "?order=newest")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator("tr.current").get_attribute("data-session") == rows.nth(1).get_attribute("data-session")
    page.keyboard.press("k")
    page.keyboard.press("Enter")
    page.wait_for_url("**/s/1795976749765_vx695")


def test_session_expand_output_and_read_a_diff(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{BASIC}")
    assert "Fix the failing date test" in page.inner_text("h1")
    failed = page.locator("#step-5")
    assert "failed (exit 1" in failed.inner_text()
    output = page.locator("#body-5")
    assert output.get_attribute("open") is None and "2 lines of output" in output.inner_text()
    output.locator("summary").click()
    wait_for(lambda: "FAIL" in output.locator(".body-content").inner_text(), "the output to load")
    diff = page.locator("#body-8 .diff")  # edits start open, highlighted server-side
    diff.wait_for()
    assert diff.locator(".gd").count() >= 1 and diff.locator(".gi").count() >= 1
    assert page.locator("#body-1").get_attribute("open") is None  # thinking stays collapsed
    shot(page, "session")
    exported = page.request.get(f"{server.url}s/{BASIC}/export.json")
    assert exported.ok and exported.json()["session"]["id"] == BASIC
    markdown = page.request.get(f"{server.url}s/{BASIC}/export.md")
    assert markdown.ok and markdown.text().startswith("# Fix the failing date test")


def test_sub_agent_steps_nest_under_the_step_that_started_them(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{HELPER_SESSION}")
    helper = page.locator(f"#step-1 .helper[data-actor='{HELPER_ACTOR}']")
    assert "config-reviewer" in helper.locator(".helper-head").inner_text()
    assert "subagent" in helper.locator(".helper-head").inner_text().lower()
    assert [helper.locator(".step").nth(i).get_attribute("id") for i in range(3)] == ["step-2", "step-3", "step-4"]
    assert "HELPER-REPLY" in helper.inner_text()
    shot(page, "session-subagent")


def test_search_then_follow_a_result(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{BASIC}")
    page.keyboard.press("/")  # the header's search box
    page.keyboard.type("lint")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?q=lint")
    hits = page.locator("ol.hits li")
    assert hits.count() >= 1 and hits.first.locator("mark").count() >= 1
    shot(page, "search")
    page.goto(f"{server.url}search?q=npm&type=command&failed=1")
    link = page.locator("ol.hits li a.open-link").first
    href = link.get_attribute("href")
    assert href is not None and "#step-" in href
    link.click()
    page.wait_for_url(re.compile(r"/s/.+#step-\d+$"))
    anchor = href.split("#", 1)[1]
    assert page.locator(f"#{anchor}").get_attribute("class") is not None
    assert "current" in (page.locator(f"#{anchor}").get_attribute("class") or "")


def test_a_big_session_loads_its_earlier_turns_on_demand(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{BIG_SESSION}")
    lazy = page.locator("details.lazy-turn")
    assert lazy.count() == BIG_TURNS - 1  # the last turn is shown, the earlier ones wait
    assert page.locator(".step").count() == BIG_STEPS_PER_TURN
    assert f"{BIG_STEPS_PER_TURN} steps" in lazy.first.inner_text() and "BIG-PROMPT-1" in lazy.first.inner_text()
    lazy.first.locator("summary").click()
    wait_for(lambda: page.locator("#turn-1 .step").count() == BIG_STEPS_PER_TURN, "turn 1 to load")
    page.locator("#body-1 > summary").click()
    wait_for(lambda: "BIG-OUTPUT-1" in page.inner_text("#body-1"), "a body inside a loaded turn")
    page.goto(f"{server.url}search?q=BIG-OUTPUT-{BIG_STEPS_PER_TURN * 3 + 5}")
    page.locator("ol.hits a.open-link").first.click()
    seq = BIG_STEPS_PER_TURN * 3 + 5
    wait_for(lambda: "current" in (page.locator(f"#step-{seq}").get_attribute("class") or ""), "the linked step")
    assert page.locator("#turn-4").get_attribute("open") is not None
    shot(page, "session-big")


def test_a_turn_of_thousands_of_steps_comes_in_parts(browser: Any, tmp_path: Path) -> None:
    """One prompt and 2,600 steps: not a page of megabytes but the last 300-step part of the
    turn, the earlier parts headings that load when opened or linked to."""
    environ = isolated_environ(tmp_path)
    with Database.open(Path(environ["POSTRUN_DB"])) as database:
        upsert_session(database, long_turn_session(), now=datetime.now(UTC), captured_on="tests")
    served = ServeProcess(environ, tmp_path)
    watched = open_signed_in(browser, served)
    try:
        page = watched.page
        answer = page.goto(f"{served.url}s/{LONG_TURN_SESSION}")
        assert answer is not None and len(answer.body()) < 400_000, len(answer.body())
        parts = -(-LONG_TURN_STEPS // TURN_PART_STEPS)
        lazy = page.locator("details.lazy-turn")
        assert lazy.count() == parts - 1
        assert page.locator(".step").count() == LONG_TURN_STEPS - (parts - 1) * TURN_PART_STEPS
        assert "LONG-PROMPT" in lazy.first.inner_text() and "steps #0–#299" in lazy.first.inner_text()
        lazy.first.locator("summary").click()
        wait_for(lambda: page.locator("#turn-1-1 .step").count() == TURN_PART_STEPS, "part 1 to load")
        assert "LONG-REPLY-3 " in page.inner_text("#step-3")
        page.goto(f"{served.url}s/{LONG_TURN_SESSION}#step-450")  # in part 2, not loaded yet
        wait_for(lambda: "current" in (page.locator("#step-450").get_attribute("class") or ""), "the linked step")
        assert page.locator("#turn-1-2").get_attribute("open") is not None
    finally:
        watched.close()
        served.kill()


def test_files_and_activity_pages(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}files?workspace=/home/dev/work/a_read_edit&days=3650")
    paths = page.locator("h2.file-path")
    assert paths.count() == 3
    page.locator("section.file .diff").first.wait_for()
    assert "/home/dev/work/a_read_edit/src/calc.py" in page.inner_text("main")
    shot(page, "files")
    page.locator("section.file a.open-link").first.click()
    page.wait_for_url(f"**/s/{REAL_A}#step-*")
    page.goto(f"{server.url}activity?from=2026-09-01&to=2026-11-30")
    charts = page.locator("figure.chart")
    assert charts.count() == 4
    assert page.locator("figure.chart").first.locator("rect.bar[height]:not([height='0.0'])").count() == 2
    assert "Sessions" in charts.first.inner_text()
    shot(page, "activity")


def test_record_and_change_a_verdict(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{REAL_A}")
    page.fill("#verdict textarea", "checked the diff")
    page.click("#verdict button.follow")
    page.wait_for_url(f"**/s/{REAL_A}?saved=1#verdict")
    assert "needs follow-up" in page.inner_text("#verdict")
    page.click("#verdict button.good")
    page.wait_for_url(f"**/s/{REAL_A}?saved=1#verdict")
    assert "looks good" in page.inner_text("#verdict .verdict")
    assert "2 verdicts" in page.inner_text("#verdict")
    page.goto(f"{server.url}?verdict=looks_good")
    assert [page.locator("tbody tr").nth(i).get_attribute("data-session") for i in range(1)] == [REAL_A]
    page.goto(f"{server.url}?verdict=unreviewed")
    assert REAL_A not in page.inner_text("table.sessions")


def test_hostile_content_renders_as_text_and_runs_nothing(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{HOSTILE_SESSION}")
    for summary in page.locator("details.body > summary").all():
        details = summary.locator("..")
        if details.get_attribute("open") is None:
            summary.click()
    wait_for(lambda: page.locator("details.body .loading").count() == 0, "every body to load")
    text = page.inner_text("main")
    for value in (HOSTILE["script"], HOSTILE["img"], HOSTILE["js_url"], "</style><style>body{display:none}</style>"):
        assert value in text
    assert "bell\\x07 esc\\x1b[31m nul\\x00 del\\x7f end" in text
    assert "more characters in the JSON export" in text  # the 2 MB line is cut
    assert page.evaluate(f"window.{CANARY}") is None
    assert page.locator("main script, main img, main iframe, main style, main [onerror]").count() == 0
    assert page.locator("main a[href^='javascript:']").count() == 0
    assert page.is_visible("main")
    shot(page, "session-hostile")
    page.goto(f"{server.url}search?q=HOSTILE-END")
    assert HOSTILE["script"] in page.inner_text("ol.hits")
    page.goto(server.url)
    assert HOSTILE["img"] in page.inner_text("table.sessions")
    assert page.evaluate(f"window.{CANARY}") is None


def test_an_open_page_follows_a_running_capture(browser: Any, tmp_path: Path) -> None:
    environ = isolated_environ(tmp_path)
    root = copy_data("cline/basic_act", tmp_path / "data")
    environ.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_DEBOUNCE_SECONDS="0.2", POSTRUN_POLL_SECONDS="0.3")
    capture = CaptureProcess(environ, tmp_path)
    served: ServeProcess | None = None
    try:
        capture.wait_for_log(r"INFO cline: caught up with 1 session in ")  # the start-up ingest is done
        served = ServeProcess(environ, tmp_path)
        watched = open_signed_in(browser, served)
        page = watched.page
        page.set_viewport_size({"width": 1280, "height": 500})
        page.goto(f"{served.url}s/{BASIC}")
        # Polled from here: the page's CSP (rightly) forbids the eval that wait_for_function needs.
        wait_for(lambda: page.evaluate("document.documentElement.dataset.live") == "on", "the live stream")
        page.locator("#body-5 > summary").click()
        wait_for(lambda: "FAIL" in page.inner_text("#body-5"), "the output to load")
        page.evaluate("window.scrollTo(0, 400); window.__sameDocument = true")
        scrolled = page.evaluate("window.scrollY")
        messages = root / BASIC / f"{BASIC}.messages.json"
        content = messages.read_bytes()
        assert b"Fixing the off-by-one." in content
        changed_at = time.monotonic()
        write_in_place(messages, content.replace(b"Fixing the off-by-one.", b"Fixing the off-by-one (live edit).", 1))
        capture.wait_for_log(rf"INFO cline updated {BASIC} ")
        stored_at = time.monotonic()
        wait_for(lambda: "(live edit)" in page.inner_text("#step-7"), "the page to show the change")
        shown_at = time.monotonic()
        assert page.evaluate("window.__sameDocument") is True  # no reload
        assert page.locator("#body-5").get_attribute("open") is not None  # still expanded
        assert "FAIL" in page.inner_text("#body-5")
        assert abs(page.evaluate("window.scrollY") - scrolled) <= 2
        assert shown_at - stored_at < 10, (stored_at - changed_at, shown_at - stored_at)
        shot(page, "session-live")
        page.click("#history-toggle")
        page.wait_for_url(f"**/s/{BASIC}?history=1")
        assert "changed" in page.inner_text("#step-7 .earlier")
        assert "Fixing the off-by-one." in page.inner_text("#step-7 .earlier")
        page.context.close()
        assert watched.errors == [] and watched.outside == []
    finally:
        if served is not None:
            served.kill()
        capture.kill()


def test_real_sub_agents_nest_under_the_steps_that_spawned_them(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{REAL_H}")
    for actor, steps in (("agent_1795976750621_u6sv2j", 4), ("agent_1795976750622_zikz6r", 3)):
        helper = page.locator(f".helper[data-actor='{actor}']")
        assert helper.count() == 1
        spawn = page.locator(".step", has=helper).last
        assert "spawn_agent" in spawn.locator(".line").first.inner_text()
        assert helper.locator(".step").count() == steps
        assert "subagent" in helper.locator(".helper-head").inner_text().lower()
    shot(page, "session-real-subagents")
