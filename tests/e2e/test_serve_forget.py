"""A running `postrun serve` forgets what `postrun forget` forgot, at its next page."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import copy_data
from tests.support.web import ServeProcess, request, sign_in

SESSION = "1790000100000_review"  # the only one in /home/dev/shop
BASIC = "1790000000000_basic"
ODD = "1790000300000_oddsh"  # another in /home/dev/app


def test_a_forgotten_sessions_workspace_leaves_the_running_apps_filters(env: dict[str, str], tmp_path: Path) -> None:
    root = copy_data("cline/review_flags", tmp_path / "data")
    for case, session_id in (("basic_act", BASIC), ("odd_shapes", ODD)):
        shutil.copytree(FIXTURES / "cline" / case / "data" / "sessions" / session_id, root / session_id)
    assert run_postrun("ingest", str(root / SESSION), str(root / BASIC), env=env).returncode == 0
    server = ServeProcess(env, tmp_path)
    try:
        cookie = sign_in(server)

        def page(path: str) -> str:
            answer = request(server.port, path, cookie=cookie, address=server.host)
            if answer.status == 303:  # /files opens on a workspace
                answer = request(server.port, answer.headers["location"], cookie=cookie, address=server.host)
            assert answer.status == 200, answer
            return answer.body

        for path in ("/", "/files", "/activity"):
            assert '<option value="/home/dev/shop"' in page(path), path
        # Forgotten while another session comes in: the app holds as many sessions as before.
        assert run_postrun("forget", SESSION, "--yes", env=env).returncode == 0
        assert run_postrun("ingest", str(root / ODD), env=env).returncode == 0
        # The first page after it already leaves it out, in every filter.
        for path in ("/", "/files", "/activity"):
            body = page(path)
            assert '<option value="/home/dev/shop"' not in body and '<option value="/home/dev/app"' in body, path
        assert SESSION not in page("/") and ODD in page("/")
        assert request(server.port, f"/s/{SESSION}", cookie=cookie, address=server.host).status == 404
    finally:
        server.kill()
