"""End to end: the real `postrun serve` process over HTTP (no browser): access, headers, lifetime."""

from __future__ import annotations

import re
import signal
import socket
import stat
import subprocess
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from postrun.exitcodes import ExitCode
from postrun.store.db import Database
from postrun.store.write import upsert_session
from tests.conftest import isolated_environ, postrun_command, run_postrun
from tests.support.builders import command_step, mapped_session, message_step
from tests.support.permissions import permissions_apply
from tests.support.web import (
    HELPER_SESSION,
    ServeProcess,
    ingest_fixtures,
    request,
    sign_in,
    store_hand_made,
    wait_for,
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("serve")
    environ = isolated_environ(tmp)
    ingest_fixtures(environ)
    store_hand_made(Path(environ["POSTRUN_DB"]))
    server = ServeProcess(environ, tmp)
    yield server, environ
    server.kill()


def test_wrong_host_is_403_before_anything_else(served: tuple[ServeProcess, dict[str, str]]) -> None:
    server, _ = served
    cookie = sign_in(server)
    for host in ("evil.example", f"evil.example:{server.port}", f"127.0.0.1:{server.port + 1}", "127.0.0.1"):
        answer = request(server.port, "/", host=host, cookie=cookie)
        assert answer.status == 403, host
        assert answer.headers["x-content-type-options"] == "nosniff"
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"[::1]:{server.port}"):
        assert request(server.port, "/", host=host, cookie=cookie).status == 200, host


def test_without_the_cookie_every_page_is_401_with_a_hint(served: tuple[ServeProcess, dict[str, str]]) -> None:
    server, _ = served
    for path in ("/", f"/s/{HELPER_SESSION}", "/search?q=npm", "/files", "/activity", "/events", "/static/app.js"):
        answer = request(server.port, path)
        assert answer.status == 401, path
        assert answer.body == "not signed in: run `postrun open` (or `postrun open --print`) for a login link\n"
    assert request(server.port, "/", cookie=f"postrun_{server.port}=forged").status == 401


def test_a_login_link_works_once(served: tuple[ServeProcess, dict[str, str]]) -> None:
    server, _ = served
    login = server.login_url()
    assert login.startswith(f"{server.url}login?token=")
    path = login[len(server.url) - 1 :]
    first = request(server.port, path)
    assert first.status == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert f"postrun_{server.port}=" in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    again = request(server.port, path)
    assert again.status == 401 and "set-cookie" not in again.headers
    tampered = path[:-1] + ("0" if path[-1] != "0" else "1")
    assert request(server.port, tampered).status == 401


def test_security_headers_on_every_page(served: tuple[ServeProcess, dict[str, str]]) -> None:
    server, _ = served
    cookie = sign_in(server)
    answer = request(server.port, "/", cookie=cookie)
    assert answer.status == 200
    policy = answer.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert '<script src="/static/app.js" defer></script>' in answer.body
    assert "<script>" not in answer.body and " style=" not in answer.body


def test_the_verdict_post_needs_origin_and_csrf(served: tuple[ServeProcess, dict[str, str]]) -> None:
    server, environ = served
    cookie = sign_in(server)
    page = request(server.port, f"/s/{HELPER_SESSION}", cookie=cookie)
    csrf = page.body.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    path = f"/s/{HELPER_SESSION}/verdict"
    origin = {"Origin": f"http://127.0.0.1:{server.port}"}
    body = f"csrf={csrf}&state=needs_follow_up&note=check+DEBUG"
    assert request(server.port, path, method="POST", cookie=cookie, body=body).status == 403  # no Origin
    for evil in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
    ):
        assert request(server.port, path, method="POST", cookie=cookie, body=body, headers=evil).status == 403
    stale = "csrf=0&state=looks_good&note="
    assert request(server.port, path, method="POST", cookie=cookie, body=stale, headers=origin).status == 403
    assert request(server.port, path, method="GET", cookie=cookie).status == 405
    listed = run_postrun("sessions", "--verdict", "needs_follow_up", env=environ)
    assert HELPER_SESSION not in listed.stdout
    saved = request(server.port, path, method="POST", cookie=cookie, body=body, headers=origin)
    assert saved.status == 303, saved
    listed = run_postrun("sessions", "--verdict", "needs_follow_up", "--json", env=environ)
    assert HELPER_SESSION in listed.stdout and '"note": "check DEBUG"' in listed.stdout
    bad = f"csrf={csrf}&state=perfect&note="
    assert request(server.port, path, method="POST", cookie=cookie, body=bad, headers=origin).status == 400


def test_a_token_with_non_ascii_text_is_refused_not_a_500(served: tuple[ServeProcess, dict[str, str]]) -> None:
    """A cookie another local page set, a mangled link or form: refused like any wrong token,
    never a server error with a traceback in serve's log."""
    server, _ = served
    assert request(server.port, "/", cookie=f"postrun_{server.port}=\u00e9").status == 401
    assert request(server.port, "/login?token=1.a.%C3%A9").status == 401
    cookie = sign_in(server)
    origin = {"Origin": f"http://127.0.0.1:{server.port}"}
    for path in (f"/s/{HELPER_SESSION}/verdict", "/verdicts"):
        body = f"csrf=%C3%A9&state=looks_good&session={HELPER_SESSION}"
        answer = request(server.port, path, method="POST", cookie=cookie, body=body, headers=origin)
        assert answer.status == 403 and answer.body == "forbidden: stale form, reload the page\n", path
    assert "Traceback" not in server.log_path.read_text()


def test_state_file_is_private(served: tuple[ServeProcess, dict[str, str]]) -> None:
    _, environ = served
    state = Path(environ["XDG_STATE_HOME"]) / "postrun" / "serve.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::", "example.com"])
def test_refuses_to_bind_a_non_loopback_address(env: dict[str, str], host: str) -> None:
    result = run_postrun("serve", "--host", host, "--port", "0", env=env, timeout=30)
    assert result.returncode == 2
    assert result.stderr.startswith("error: --host: ") and "127.0.0.1" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_second_server_is_refused_while_the_first_listens(env: dict[str, str], tmp_path: Path) -> None:
    """One state file names the running review app: a second `serve` taking it over left the
    first unreachable by `postrun open` once the second stopped (from an audit)."""
    first = ServeProcess(env, tmp_path)
    try:
        second = run_postrun("serve", "--port", "0", env=env, timeout=30)
        assert second.returncode == 75 == ExitCode.ALREADY_RUNNING
        assert second.stderr.startswith("error: ") and len(second.stderr.strip().splitlines()) == 1
        assert f"a review app is already running at {first.url} (pid {first.process.pid})" in second.stderr
        assert f"{first.url}login?token=" in first.login_url()  # the first one is still the one `open` names
    finally:
        first.stop()
    # Its state file gone with it, a server starts again.
    again = ServeProcess(env, tmp_path)
    again.stop()


def test_port_in_use_is_one_line_and_exit_1(env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_postrun("serve", "--port", str(port), env=env, timeout=30)
    assert result.returncode == 1
    assert result.stderr == f"error: 127.0.0.1:{port}: port already in use (choose another with --port)\n"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_stops_cleanly_within_5_s_even_with_a_live_page(env: dict[str, str], tmp_path: Path, number: int) -> None:
    server = ServeProcess(env, tmp_path)
    try:
        cookie = sign_in(server)
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as stream:
            # A live page's event stream, still open when the signal comes.
            stream.sendall(
                f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nCookie: {cookie}\r\n\r\n".encode()
            )
            received = b""
            while b"retry: 2000" not in received:
                chunk = stream.recv(4096)
                assert chunk, received
                received += chunk
            code, seconds = server.stop(number)
        assert code == 0 and seconds < 5
        state = Path(env["XDG_STATE_HOME"]) / "postrun" / "serve.json"
        assert not state.exists()
        gone = run_postrun("open", "--print", env=env)
        assert gone.returncode == 3 and "no review app running" in gone.stderr
    finally:
        server.kill()


def test_the_markdown_download_is_what_postrun_export_gives(served: tuple[ServeProcess, dict[str, str]]) -> None:
    """Both are meant for sharing: secrets masked and the home folder shown as ``~``."""
    server, environ = served
    home = environ["HOME"]
    session_id = "1790000000001_homepath"
    steps = [
        message_step(0, "read my notes", role="user", session_id=session_id),
        command_step(1, f"cat {home}/project/notes.txt", "ok", session_id=session_id),
    ]
    with Database.open(Path(environ["POSTRUN_DB"])) as database:
        upsert_session(
            database, mapped_session(steps, session_id=session_id), now=datetime.now(UTC), captured_on="tests"
        )
    answer = request(server.port, f"/s/{session_id}/export.md", cookie=sign_in(server))
    assert answer.status == 200
    assert "~/project/notes.txt" in answer.body and home not in answer.body
    exported = run_postrun("export", session_id, "--format", "markdown", env=environ)
    assert answer.body == exported.stdout


def test_a_session_id_beyond_ascii_downloads(served: tuple[ServeProcess, dict[str, str]]) -> None:
    """The store takes any non-empty id; its page shows, so its downloads must too (the
    file name is an ASCII stand-in, as a header can carry nothing else)."""
    server, environ = served
    session_id = "1790000000002_\u00e9\u65e5"
    steps = [message_step(0, "hello", role="user", session_id=session_id)]
    with Database.open(Path(environ["POSTRUN_DB"])) as database:
        upsert_session(
            database, mapped_session(steps, session_id=session_id), now=datetime.now(UTC), captured_on="tests"
        )
    cookie = sign_in(server)
    quoted = urllib.parse.quote(session_id)
    assert request(server.port, f"/s/{quoted}", cookie=cookie).status == 200
    for name in ("export.json", "export.md"):
        answer = request(server.port, f"/s/{quoted}/{name}", cookie=cookie)
        assert answer.status == 200, (name, answer.body[:200])
        suffix = name.removeprefix("export")
        assert answer.headers["content-disposition"] == f'attachment; filename="1790000000002___{suffix}"'
        assert "hello" in answer.body


def _fake_browser(tmp_path: Path) -> tuple[Path, Path]:
    """A browser ($BROWSER) that records the arguments it was started with, one line each."""
    record = tmp_path / "browser-argv"
    script = tmp_path / "fake-browser"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" >> {record}\n')
    script.chmod(0o755)
    return script, record


def _redeemed_from_page(server: ServeProcess, argv: list[str]) -> Path:
    """The page the browser was given (a private file): it sends the browser to a login link
    that signs in."""
    (address,) = argv[1:]
    assert address.startswith("file://") and "token" not in address, argv
    page = Path(urllib.parse.unquote(urllib.parse.urlparse(address).path))
    assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
    (link,) = set(re.findall(r'(http://127\.0\.0\.1:\d+/login\?token=[^"]+)', page.read_text()))
    assert request(server.port, link[len(server.url) - 1 :]).status == 303
    return page


def test_open_keeps_the_login_link_off_the_browsers_command_line(env: dict[str, str], tmp_path: Path) -> None:
    # A browser's arguments are readable by every local user (`ps`, /proc/<pid>/cmdline) while it
    # runs: the one-time link there would sign them in. `postrun open` gives it a 0600 page in
    # the private state folder that sends it on, as Jupyter does; `serve --open` too.
    script, record = _fake_browser(tmp_path)
    opened = {**env, "BROWSER": str(script)}
    server = ServeProcess(opened, tmp_path)
    try:
        done = run_postrun("open", env=opened)
        assert done.returncode == 0 and done.stdout == "", done
        # The way out for a browser that may not read the state folder (a snap's) is said.
        assert done.stderr == f"opened {server.url} in your browser (if it shows an error: postrun open --print)\n"
        first = _redeemed_from_page(server, record.read_text().splitlines())
    finally:
        server.kill()
    record.unlink()
    server = ServeProcess(opened, tmp_path, "--open")
    try:
        wait_for(lambda: record.exists() and record.read_text().endswith("\n"), "serve --open to start the browser")
        second = _redeemed_from_page(server, record.read_text().splitlines())
        code, _ = server.stop(signal.SIGTERM)
        assert code == 0
        assert not first.exists() and not second.exists()  # no link to a stopped server is left behind
    finally:
        server.kill()


def test_open_prints_the_link_when_its_page_cannot_be_written(env: dict[str, str], tmp_path: Path) -> None:
    # The page is a way to keep the link off the browser's command line, not a reason to fail:
    # where it cannot be written, the link is given as without a browser.
    prefix = permissions_apply(
        ["--bounding-set=-dac_override,-dac_read_search"], "cannot drop the file-permission capabilities here"
    )
    script, record = _fake_browser(tmp_path)
    opened = {**env, "BROWSER": str(script)}
    server = ServeProcess(opened, tmp_path)
    state_folder = Path(opened["XDG_STATE_HOME"]) / "postrun"
    try:
        state_folder.chmod(0o500)
        done = subprocess.run(
            [*prefix, *postrun_command(), "open"], env=opened, capture_output=True, text=True, timeout=120
        )
    finally:
        state_folder.chmod(0o700)
        server.kill()
    assert done.returncode == 0, done
    said = ": cannot write (Permission denied); open this link (valid once, for 60 s):"
    assert done.stderr.startswith(f"warning: {state_folder}/open-") and done.stderr.endswith(said + "\n"), done.stderr
    assert done.stdout.startswith(f"{server.url}login?token=")
    assert not record.exists()  # no browser was started with the link
