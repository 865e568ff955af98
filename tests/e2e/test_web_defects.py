"""The review app's defects of issue 24, each through the real `postrun serve` (raw HTTP): no
request of any shape makes a page fail or run unbounded; the start and stop of serve; bidi
controls neutralised on the page and in every export.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from postrun.store.db import Database
from postrun.store.write import upsert_session
from postrun.text import BIDI_CONTROLS
from tests.conftest import isolated_environ, postrun_command, run_postrun
from tests.support.builders import command_step, mapped_session, message_step, session_record
from tests.support.web import ServeProcess, ingest_fixtures, request, sign_in, store_hand_made
from tests.support.web_inbox import build_inbox_store

BIDI = "".join(
    chr(code)
    for code in (0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C)
)
BIDI_SESSION = "1790000900000_bidis"
EDITS_SESSION = "1790000910000_edits"
EDITS = 1_263
EDITS_ROOT = "/home/dev/many-edits"
_RAW_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def _bidi_session() -> Any:
    sid = BIDI_SESSION
    evil = f"invoice_{BIDI[4]}fdp.exe total {BIDI}"
    steps = [
        message_step(0, f"Rename {evil}", role="user", session_id=sid),
        command_step(1, f"mv {evil} out/", f"moved {evil}\n", exit_code=0, session_id=sid),
        message_step(2, f"Done: {evil}", session_id=sid),
    ]
    return mapped_session(steps, session_id=sid, session=session_record(sid, workspace={"root": f"/home/dev/{evil}"}))


def _edits_session() -> Any:
    sid = EDITS_SESSION
    steps = [message_step(0, "Touch many files", role="user", session_id=sid)]
    for seq in range(1, EDITS + 1):
        steps.append(
            {
                **command_step(seq, "x", "", session_id=sid),
                "id": f"call_edit_{seq}#0",
                "type": "edit",
                "decision": "auto",
                "at": (datetime(2026, 11, 1, tzinfo=UTC) + timedelta(seconds=seq)).isoformat()[:19] + ".000Z",
                "payload": {
                    "path": f"{EDITS_ROOT}/f{seq % 40}.py",
                    "is_full_write": False,
                    "old_string": "a",
                    "new_string": f"b{seq}",
                },
            }
        )
    session = session_record(sid, workspace={"root": EDITS_ROOT}, started_at="2026-11-01T00:00:00.000Z")
    return mapped_session(steps, session_id=sid, session=session)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, dict[str, str], str]]:
    tmp = tmp_path_factory.mktemp("defects")
    environ = isolated_environ(tmp)
    ingest_fixtures(environ)
    db = Path(environ["POSTRUN_DB"])
    store_hand_made(db)
    build_inbox_store(db)
    with Database.open(db) as database:
        for mapped in (_bidi_session(), _edits_session()):
            upsert_session(database, mapped, now=datetime.now(UTC), captured_on="tests")
    server = ServeProcess(environ, tmp)
    yield server, environ, sign_in(server)
    server.kill()


def get(served: tuple[ServeProcess, dict[str, str], str], path: str) -> Any:
    server, _, cookie = served
    return request(server.port, path, cookie=cookie)


def test_activity_is_bounded_and_never_draws_more_than_a_bar_a_day(served: Any) -> None:
    far = get(served, "/activity?from=1000-01-01")
    assert far.status == 400
    assert "at most 3,650 days at once" in far.body and "<h1" in far.body
    today = date.today()
    widest = get(served, f"/activity?from={today - timedelta(days=3649)}&to={today}")
    assert widest.status == 200
    charts = widest.body.split("<figure")[1:]
    assert len(charts) == 4
    for chart in charts:
        assert 0 < chart.count("<rect") <= 366  # several days a bar: at most a bar a day, and a year of bars
    month = get(served, "/activity?from=2026-09-01&to=2026-09-30")
    assert [chart.count("<rect") for chart in month.body.split("<figure")[1:]] == [30] * 4
    assert get(served, f"/activity?from={today - timedelta(days=3650)}&to={today}").status == 400


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/?to=9999-12-31", 200, "sessions"),
        ("/?from=0001-01-01&to=9999-12-31", 200, "sessions"),
        ("/activity?to=9999-12-31", 200, "Activity"),
        ("/activity?to=0001-01-03", 200, "Activity"),
        ("/?page=99999999999999999999", 400, "page"),
        ("/?page=0", 400, "page"),
        ("/?page=9999", 400, "past the last page"),
        ("/?to=2026-02-30", 400, "expected a date"),
        ("/?agent=nope", 400, "unknown value &#39;nope&#39; (known: claude-code, cline, codex)"),
        ("/?flag=nope", 400, "unknown value &#39;nope&#39; (known: dangerous_command,"),
        ("/files?days=99999999999999999999", 400, "days"),
        ("/files?workspace=/home/dev/many-edits&page=99999999999999999999", 400, "page"),
        ("/activity?from=2026-05-01&to=2026-04-01", 400, "starts"),
        ("/search?q=x&type=nope", 400, "unknown value"),
    ],
)
def test_a_bad_parameter_is_a_400_page_with_the_reason(served: Any, path: str, status: int, says: str) -> None:
    answer = get(served, path)
    assert answer.status == status, answer.body[:300]
    assert says in answer.body
    assert "<h1" in answer.body


def test_an_ambiguous_prefix_lists_the_matches(served: Any) -> None:
    answer = get(served, "/s/1")
    assert answer.status == 300
    assert "More than one session starts with" in answer.body
    links = re.findall(r'<a href="/s/([^"]+)">', answer.body)
    assert len(links) == 10 and all(link.startswith("1") for link in links)
    assert "type more of the id" in answer.body
    narrow = get(served, "/s/17901000")
    assert narrow.status == 300 and len(re.findall(r'<a href="/s/', narrow.body)) == 8
    assert get(served, "/s/1790000900000").status == 200  # a unique prefix opens the session
    assert get(served, "/s/1/export.md").status == 300


HOSTILE_VALUES = ("", "-1", "1e9", "99999999999999999999", "\x00", "../../etc/passwd", "<script>", "a" * 5000, "\u202e")
ROUTES = (
    "/", "/search", "/files", "/activity", "/s/1790100010000_ccdgr", "/s/1790100010000_ccdgr/turn",
    "/s/1790100010000_ccdgr/step", "/s/1790100010000_ccdgr/live", "/s/1790100010000_ccdgr/export.md",
)  # fmt: skip
NAMES = ("page", "from", "to", "days", "q", "type", "agent", "flag", "state", "verdict", "order", "workspace", "id")


def test_no_request_of_any_shape_fails(served: Any) -> None:
    server, _, cookie = served
    for route in ROUTES:
        for name in NAMES:
            for value in HOSTILE_VALUES:
                path = f"{route}?{name}={urllib.parse.quote(value)}"
                started = time.monotonic()
                answer = request(server.port, path, cookie=cookie)
                assert answer.status < 500, (path[:120], answer.status, answer.body[:200])
                assert time.monotonic() - started < 10, path[:120]


def test_files_says_how_many_and_pages(served: Any) -> None:
    first = get(served, f"/files?workspace={EDITS_ROOT}&days=3650")
    assert first.status == 200
    assert "first 500 of 1,263 edits" in first.body
    assert first.body.count('class="file-edit"') == 500
    assert "page 1 of 3" in first.body
    second = get(served, f"/files?workspace={EDITS_ROOT}&days=3650&page=2")
    assert "edits 501–1,000 of 1,263" in second.body and second.body.count('class="file-edit"') == 500
    third = get(served, f"/files?workspace={EDITS_ROOT}&days=3650&page=3")
    assert "edits 1,001–1,263 of 1,263" in third.body and third.body.count('class="file-edit"') == 263
    newest = re.search(r"#step-(\d+)\"", first.body)
    assert newest is not None and newest.group(1) == str(EDITS)  # newest first
    assert get(served, f"/files?workspace={EDITS_ROOT}&days=3650&page=4").status == 400


def test_a_long_search_is_bounded_in_terms(served: Any) -> None:
    words = " ".join(f"moved{i}" for i in range(200))
    answer = get(served, "/search?q=" + words.replace(" ", "+"))
    assert answer.status == 200
    assert "Searched for the first words only (8 terms at most)" in answer.body
    both = get(served, "/search?q=moved+" + "+".join(f"zz{i}" for i in range(50)))
    assert both.status == 200 and "Left out:" in both.body


def test_serve_on_another_loopback_address_works_as_it_says(env: dict[str, str], tmp_path: Path) -> None:
    server = ServeProcess(env, tmp_path, "--host", "127.0.0.2")
    try:
        assert server.url == f"http://127.0.0.2:{server.port}/"
        assert server.login_url().startswith(server.url)
        cookie = sign_in(server)
        answer = request(server.port, "/", cookie=cookie, address="127.0.0.2")
        assert answer.status == 200 and "<h1" in answer.body
        rebound = request(server.port, "/", cookie=cookie, address="127.0.0.2", host=f"evil.example:{server.port}")
        assert rebound.status == 403
    finally:
        server.kill()


def test_a_stop_signal_right_at_start_leaves_no_state_file(env: dict[str, str], tmp_path: Path) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "postrun" / "serve.json"
    for attempt in range(5):
        started = time.monotonic()
        process = subprocess.Popen(
            [*postrun_command(), "serve", "--port", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            while not state.exists() and process.poll() is None and time.monotonic() - started < 60:
                time.sleep(0.001)  # a signal as soon as the file is there
            process.send_signal(signal.SIGTERM)
            code = process.wait(30)
        finally:
            process.kill()
            process.wait()
            if process.stderr is not None:
                process.stderr.close()
        assert code == 0, (attempt, code)
        assert not state.exists(), attempt


def test_bidi_controls_are_shown_as_escapes_on_every_page_and_in_every_export(served: Any) -> None:
    _, environ, _ = served
    pages = [
        "/",
        f"/s/{BIDI_SESSION}",
        f"/s/{BIDI_SESSION}/live",
        f"/s/{BIDI_SESSION}/step?id=toolu_1%230",
        "/search?q=moved",
        "/files?workspace=" + urllib.parse.quote(f"/home/dev/invoice_{BIDI[4]}fdp.exe total {BIDI}"),
        "/activity",
        f"/s/{BIDI_SESSION}/export.md",
        f"/s/{BIDI_SESSION}/export.json",
    ]
    for path in pages:
        answer = get(served, path)
        assert answer.status == 200, path
        assert _RAW_BIDI.search(answer.body) is None, path
    shown = get(served, f"/s/{BIDI_SESSION}").body
    assert "invoice_\\u202efdp.exe" in shown
    for export_format in ("markdown", "html", "json", "jsonl"):
        done = run_postrun("export", BIDI_SESSION, "--format", export_format, env=environ)
        assert done.returncode == 0 and _RAW_BIDI.search(done.stdout) is None, export_format
    envelope = orjson.loads(run_postrun("export", BIDI_SESSION, env=environ).stdout)
    assert BIDI in envelope["steps"][1]["payload"]["command"]  # the archive keeps the value itself
    for args in (("show", BIDI_SESSION), ("show", BIDI_SESSION, "--history"), ("sessions",)):
        done = run_postrun(*args, env=environ)
        assert done.returncode == 0 and _RAW_BIDI.search(done.stdout) is None, args
