"""The page `postrun open` gives a browser in place of the login link: private, sending it on,
and gone once its link can no longer be used."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from postrun.web.auth import LOGIN_TOKEN_SECONDS
from postrun.web.launch import redirect_page, remove_redirects, write_redirect


def test_the_page_sends_the_browser_to_the_link_and_holds_nothing_else(tmp_path: Path) -> None:
    url = 'http://127.0.0.1:8765/login?token=1.a"b<c>.f00'
    page = write_redirect(tmp_path / "state", url)
    assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
    text = page.read_text()
    assert text == redirect_page(url)
    assert 'content="0;url=http://127.0.0.1:8765/login?token=1.a&quot;b&lt;c&gt;.f00"' in text
    assert "<script" not in text and url not in text  # escaped, never raw


def test_pages_whose_link_expired_are_removed_when_the_next_is_written(tmp_path: Path) -> None:
    old = write_redirect(tmp_path, "http://127.0.0.1:1/login?token=old")
    expired = time.time() - LOGIN_TOKEN_SECONDS - 1
    os.utime(old, (expired, expired))
    fresh = write_redirect(tmp_path, "http://127.0.0.1:1/login?token=fresh")
    newer = write_redirect(tmp_path, "http://127.0.0.1:1/login?token=newer")
    assert not old.exists() and fresh.exists() and newer.exists()
    (tmp_path / "serve.json").write_text("{}")
    remove_redirects(tmp_path)  # as serve does when it stops
    assert sorted(path.name for path in tmp_path.iterdir()) == ["serve.json"]
