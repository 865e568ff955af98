"""The review inbox in a real browser: headless Chromium driven by Playwright against the real
`postrun serve`, over a store built for it (tests/support/web_inbox.py: sessions of cline,
claude-code and codex with known flags, failed commands, rejected steps and verdicts).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from postrun.store.db import Database
from postrun.store.verdicts import verdict_history
from tests.conftest import FIXTURES, isolated_environ, run_postrun
from tests.support.browser import Watched, open_signed_in, require_chromium, shot
from tests.support.web import ServeProcess, request, sign_in, wait_for
from tests.support.web_inbox import (
    EXPECTED_ORDER,
    FILLERS,
    FIRST_FLAGGED,
    PLANNED,
    A,
    B,
    C,
    D,
    E,
    F,
    G,
    H,
    build_inbox_store,
    filler_id,
)

require_chromium()

AGENTS = {plan.id: plan.agent for plan in PLANNED}
REVIEW_FLAGS = "1790000100000_review"  # a real Cline session with danger flags, rejected steps, failures


def _serve(tmp: Path) -> ServeProcess:
    environ = isolated_environ(tmp)
    build_inbox_store(Path(environ["POSTRUN_DB"]))
    return ServeProcess(environ, tmp)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    served = _serve(tmp_path_factory.mktemp("inbox"))
    yield served
    served.kill()


def listed(page: Any) -> list[str]:
    rows = page.locator("table.sessions tbody tr")
    return [str(rows.nth(i).get_attribute("data-session")) for i in range(rows.count())]


def test_the_first_page_is_the_inbox(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    assert page.url == server.url
    assert listed(page)[: len(EXPECTED_ORDER)] == EXPECTED_ORDER
    assert listed(page)[len(EXPECTED_ORDER)] == filler_id(FILLERS - 1)  # then the rest, newest first
    needs = [
        row
        for row in EXPECTED_ORDER
        if "needs-review" in (page.locator(f"tr[data-session='{row}']").get_attribute("class") or "")
    ]
    assert needs == [A.id, G.id, C.id, B.id]
    inbox = page.locator("#inbox")
    text = " ".join(inbox.inner_text().split())
    assert "4 unreviewed sessions with danger flags, failed commands or rejected steps" in text
    assert "2 with danger flags · 1 with failed commands · 1 with rejected steps" in text
    counted = {}
    for link in inbox.locator(".inbox-kinds a").all():
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(str(link.get_attribute("href"))).query)
        word = link.evaluate("(el) => el.firstChild.textContent.trim()")
        counted[query["flag"][0]] = f"{word} {link.locator('.kind-count').inner_text()}"
    assert counted == {
        "dangerous_command": "risky command 1",
        "secret_in_output": "secret 1",
        "sensitive_read": "credentials file 2",
        "rejected": "rejected 1",
        "failed": "failed 2",
    }
    shot(page, "inbox")
    # One click to each inbox session's first flagged step.
    for session_id in (A.id, G.id, C.id, B.id):
        link = page.locator(f"tr[data-session='{session_id}'] a.first-flag")
        assert link.get_attribute("href") == f"/s/{session_id}#step-{FIRST_FLAGGED[session_id]}"
    assert page.locator(f"tr[data-session='{D.id}'] a.first-flag").count() == 0  # reviewed
    page.locator(f"tr[data-session='{G.id}'] a.first-flag").click()
    page.wait_for_url(f"**/s/{G.id}#step-2")
    wait_for(lambda: "current" in (page.locator("#step-2").get_attribute("class") or ""), "the flagged step")
    page.go_back()
    page.locator(".inbox-kinds a", has_text="secret").click()
    page.wait_for_url(re.compile(r"flag=secret_in_output"))
    assert listed(page) == [G.id]


def test_every_row_and_page_shows_its_agent(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    for session_id in listed(page):
        badge = page.locator(f"tr[data-session='{session_id}'] .agent-badge")
        assert badge.inner_text() == AGENTS.get(session_id, "cline"), session_id
    for plan in (A, B, C):
        page.goto(f"{server.url}s/{plan.id}")
        assert page.locator(".session-top .agent-badge").inner_text() == plan.agent
    options = page.goto(server.url)
    assert options is not None
    assert page.locator("select[name=agent] option").all_inner_texts() == [
        "All agents",
        "claude-code",
        "cline",
        "codex",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?agent=claude-code", [A.id, E.id]),
        ("?agent=codex", [B.id, H.id, F.id]),
        ("?flag=dangerous_command", [A.id, D.id]),
        ("?flag=secret_in_output", [G.id]),
        ("?flag=sensitive_read", [G.id, F.id]),
        ("?flag=rejected", [C.id]),
        ("?flag=failed", [B.id, H.id]),
        ("?flag=any", [A.id, G.id, C.id, B.id, H.id, F.id, D.id]),
        ("?flag=any&agent=codex", [B.id, H.id, F.id]),
        ("?needs=1", [A.id, G.id, C.id, B.id]),
        ("?needs=1&agent=cline", [G.id, C.id]),
        ("?verdict=looks_good", [D.id]),
        ("?failed=1", [B.id, H.id]),
        ("?flagged=1&agent=claude-code", [A.id]),
        ("?state=open", [H.id]),
        ("?q=cxfal", [B.id]),
        ("?from=2026-09-22&to=2026-09-22&order=newest", [H.id, F.id, E.id, D.id, C.id, B.id, A.id, G.id]),
        ("?to=2026-08-01&agent=codex", []),
    ],
)
def test_every_filter(watched: Watched, server: ServeProcess, query: str, expected: list[str]) -> None:
    page = watched.page
    page.goto(server.url + query)
    assert listed(page) == expected
    if expected:
        total = page.locator(".list-count")
        assert total.get_attribute("data-total") == str(len(expected))
    else:
        assert "No sessions match." in page.inner_text("main")


def test_the_filter_form_sets_agent_and_flag(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    page.select_option("form.filters select[name=agent]", "codex")
    page.select_option("form.filters select[name=flag]", "failed")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"agent=codex.*flag=failed"))
    assert listed(page) == [B.id, H.id]
    inbox = " ".join(page.inner_text("#inbox").split())
    assert "Needs review · codex" in inbox and "1 unreviewed session with" in inbox


def test_a_total_and_a_page_jump(watched: Watched, server: ServeProcess) -> None:
    page = watched.page
    total = len(PLANNED) + FILLERS
    assert page.locator(".list-count").get_attribute("data-total") == str(total)
    assert f"{total} sessions · page 1 of 2" in page.inner_text(".list-count")
    page.fill("form.jump input[name=page]", "2")
    page.click("form.jump button")
    page.wait_for_url(re.compile(r"page=2"))
    assert len(listed(page)) == total - 50
    assert "page 2 of 2" in page.inner_text("nav.pager")
    page.goto(server.url + "?agent=cline&page=2")  # a page jump keeps the filters
    assert "page 2 of 2" in page.inner_text("nav.pager")
    page.fill("form.jump input[name=page]", "1")
    page.click("form.jump button")
    page.wait_for_url(re.compile(r"agent=cline.*page=1|page=1.*agent=cline"))


def test_saving_a_verdict_leaves_the_panel_and_its_confirmation_in_view(browser: Any, tmp_path: Path) -> None:
    served = _serve(tmp_path)
    watched = open_signed_in(browser, served)
    try:
        page = watched.page
        page.goto(f"{served.url}s/{A.id}")
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.fill("#verdict textarea", "looked at the rm -rf")
        page.click("#verdict button.follow")
        page.wait_for_url(f"**/s/{A.id}?saved=1#verdict")
        header = page.locator("header.top").bounding_box()
        panel = page.locator("#verdict").bounding_box()
        saved = page.locator("#verdict .saved")
        assert header and panel and saved.is_visible()
        confirmation = saved.bounding_box()
        assert confirmation is not None
        assert panel["y"] >= header["y"] + header["height"] - 1, (panel, header)
        assert confirmation["y"] + confirmation["height"] <= page.viewport_size["height"]
        assert "Saved: needs follow-up" in saved.inner_text()
        shot(page, "verdict-saved")
    finally:
        watched.close()
        served.kill()


def test_a_deep_link_lands_under_the_header_and_a_click_on_a_step_link_selects_it(
    watched: Watched, server: ServeProcess
) -> None:
    page = watched.page
    page.goto(f"{server.url}s/{A.id}#step-60")
    step = page.locator("#step-60")
    wait_for(lambda: "current" in (step.get_attribute("class") or ""), "the linked step to be selected")
    header = page.locator("header.top").bounding_box()
    box = step.bounding_box()
    assert header and box and page.evaluate("window.scrollY") > 0
    assert box["y"] >= header["y"] + header["height"] - 1, (box, header)
    page.keyboard.press("j")
    assert "current" in (page.locator("#step-61").get_attribute("class") or "")
    page.locator("#step-30 a.seq").click()  # a #N link moves the j/k selection
    wait_for(lambda: "current" in (page.locator("#step-30").get_attribute("class") or ""), "the clicked step")
    assert page.locator(".step.current").count() == 1
    box = page.locator("#step-30").bounding_box()
    assert box and box["y"] >= header["y"] + header["height"] - 1
    page.keyboard.press("j")
    assert "current" in (page.locator("#step-31").get_attribute("class") or "")


def test_bulk_verdicts(browser: Any, tmp_path: Path) -> None:
    served = _serve(tmp_path)
    watched = open_signed_in(browser, served)
    try:
        page = watched.page
        assert page.locator("#bulk button.good").is_disabled()  # nothing selected yet
        for session_id in (B.id, C.id):
            page.check(f"tr[data-session='{session_id}'] input[form=bulk]")
        assert "2 sessions selected" in page.inner_text("#bulk")
        page.fill("#bulk textarea", "fine, both flaky")
        page.click("#bulk button.good")
        page.wait_for_url(re.compile(r"saved=looks_good\.2"))
        assert "Saved “looks good” for 2 sessions." in page.inner_text("#inbox")
        for session_id in (B.id, C.id):
            assert page.locator(f"tr[data-session='{session_id}'] .verdict").inner_text() == "looks good"
        assert "2 unreviewed sessions" in page.inner_text("#inbox")  # A and G are left
        # Keys: x picks the current row; the header box picks the whole page.
        page.goto(served.url + "?agent=codex")
        page.keyboard.press("j")
        page.keyboard.press("x")
        assert "1 session selected" in page.inner_text("#bulk")
        page.check("input[data-select-all]")
        assert "3 sessions selected" in page.inner_text("#bulk")
        page.click("#bulk button.follow")
        page.wait_for_url(re.compile(r"agent=codex.*saved=needs_follow_up\.3"))
        assert [page.locator(f"tr[data-session='{s}'] .verdict").inner_text() for s in (B.id, H.id, F.id)] == [
            "needs follow-up"
        ] * 3
        page.goto(f"{served.url}s/{B.id}")
        assert "2 verdicts" in page.inner_text("#verdict")
        with Database.open(Path(served.env["POSTRUN_DB"])) as database:
            history = verdict_history(database, B.id)
        assert [(v.state, v.note) for v in history] == [("needs_follow_up", ""), ("looks_good", "fine, both flaky")]
        shot(page, "bulk-verdicts")
    finally:
        watched.close()
        served.kill()


def test_bulk_verdicts_need_origin_and_csrf(tmp_path: Path) -> None:
    served = _serve(tmp_path)
    try:
        cookie = sign_in(served)
        page = request(served.port, "/", cookie=cookie)
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.body)
        assert csrf is not None
        origin = {"Origin": f"http://127.0.0.1:{served.port}"}
        body = f"csrf={csrf.group(1)}&state=looks_good&session={E.id}&session={F.id}&back=/"
        refused = [
            request(served.port, "/verdicts", method="POST", cookie=cookie, body=body),  # no Origin
            request(
                served.port,
                "/verdicts",
                method="POST",
                cookie=cookie,
                body=body,
                headers={"Origin": "http://evil.example"},
            ),
            request(
                served.port,
                "/verdicts",
                method="POST",
                cookie=cookie,
                body=body.replace("csrf=", "csrf=x"),
                headers=origin,
            ),
            request(served.port, "/verdicts", method="POST", body=body, headers=origin),  # not signed in
        ]
        assert [answer.status for answer in refused] == [403, 403, 403, 401]
        unknown = request(served.port, "/verdicts", method="POST", cookie=cookie, headers=origin,
                          body=body + "&session=1790999999999_nopes")  # fmt: skip
        assert unknown.status == 404  # all or none: E and F keep no verdict
        wrong = request(served.port, "/verdicts", method="POST", cookie=cookie, headers=origin,
                        body=body.replace("looks_good", "shrug"))  # fmt: skip
        assert wrong.status == 400 and "unknown verdict &#39;shrug&#39;" in wrong.body
        with Database.open(Path(served.env["POSTRUN_DB"])) as database:
            assert verdict_history(database, E.id) == [] and verdict_history(database, F.id) == []
        done = request(served.port, "/verdicts", method="POST", cookie=cookie, body=body, headers=origin)
        assert done.status == 303 and done.headers["location"] == "/?saved=looks_good.2#inbox"
        outside = body.replace("back=/", "back=//evil.example/")
        sent = request(served.port, "/verdicts", method="POST", cookie=cookie, body=outside, headers=origin)
        assert sent.headers["location"].startswith("/?")  # never a redirect to another site
    finally:
        served.kill()


def test_the_inbox_counts_follow_the_store_on_an_open_page(browser: Any, tmp_path: Path) -> None:
    """README: "An open page follows the store": the box counting what needs review updates in
    place with the rows (it stayed as loaded, counting other sessions than the list showed)."""
    served = _serve(tmp_path)
    watched = open_signed_in(browser, served)
    fresh = watched.page.context.new_page()
    try:
        page = watched.page
        wait_for(lambda: page.evaluate("document.documentElement.dataset.live") == "on", "the live stream")

        def counts(shown: Any) -> str:
            return " ".join(shown.inner_text("#inbox").split())

        def loaded() -> str:
            fresh.goto(served.url)
            return counts(fresh)

        before = counts(page)
        assert "4 unreviewed sessions with" in before and "2 with danger flags" in before
        # A session with danger flags, rejected steps and failures is stored by another process.
        session = FIXTURES / "cline" / "review_flags" / "data" / "sessions" / REVIEW_FLAGS
        assert run_postrun("ingest", str(session), env=served.env).returncode == 0
        wait_for(lambda: page.locator(f"tr[data-session='{REVIEW_FLAGS}']").count() == 1, "the new row")
        after = loaded()
        assert after != before
        wait_for(lambda: counts(page) == after, "the inbox counts to follow the rows")
        # A verdict saved elsewhere (another tab, another browser) takes it out of the counts.
        cookie = sign_in(served)
        csrf = re.search(r'name="csrf" value="([^"]+)"', request(served.port, "/", cookie=cookie).body)
        assert csrf is not None
        saved = request(served.port, f"/s/{REVIEW_FLAGS}/verdict", method="POST", cookie=cookie,
                        headers={"Origin": f"http://127.0.0.1:{served.port}"},
                        body=f"csrf={csrf.group(1)}&state=looks_good&note=")  # fmt: skip
        assert saved.status == 303
        wait_for(lambda: page.locator(f"tr[data-session='{REVIEW_FLAGS}'] .v-looks_good").count() == 1, "the verdict")
        reviewed = loaded()
        assert reviewed != after
        wait_for(lambda: counts(page) == reviewed, "the inbox counts to drop")
    finally:
        fresh.close()
        watched.close()
        served.kill()
