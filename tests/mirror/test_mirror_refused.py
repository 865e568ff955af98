"""A session PostgreSQL refuses never keeps the others from the mirror ("one bad session never
stops another"): they are pushed, the refused one is named with the server's reason, stays
queued and is tried again. What the server refuses is a real agent's input: Claude Code read a
"path" longer than a btree index row may be (the model's guess, several kilobytes), and
`postrun.steps.path` is indexed. Real `postrun` processes, a real PostgreSQL."""

from __future__ import annotations

import random
import string
from pathlib import Path

from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.support import mirror_check
from tests.support.capture_process import CaptureProcess
from tests.support.claude_lines import Transcript

CWD = "/home/dev/work/app"
_RANDOM = random.Random(7)
# Random words compress badly: well past the 2704 bytes a btree index row may hold.
LONG_PATH = CWD + "/" + "/".join("".join(_RANDOM.choices(string.ascii_letters, k=40)) for _ in range(80))
REFUSED = "c0ffee00-0000-4000-8000-000000000002"
OTHERS = ("c0ffee00-0000-4000-8000-000000000001", "c0ffee00-0000-4000-8000-000000000003")


def write_sessions(root: Path) -> None:
    for session_id in sorted((REFUSED, *OTHERS)):
        path = LONG_PATH if session_id == REFUSED else f"{CWD}/README.md"
        t = Transcript(session_id, CWD)
        t.prompt("read it")
        t.call("msg_1", "toolu_read", "Read", {"file_path": path})
        read = {"filePath": path, "content": "hello", "numLines": 1, "startLine": 1, "totalLines": 1}
        t.result("toolu_read", "1\thello\n", tool_use_result={"type": "text", "file": read})
        t.text("msg_2", "It says hello.")
        t.write(root / "-home-dev-work-app" / f"{session_id}.jsonl")


def mirrored(mirror: Mirror) -> list[str]:
    with mirror.server.admin(mirror.database) as admin:
        if admin.execute("SELECT to_regclass('postrun.sessions')").fetchone() == (None,):
            return []  # not created yet
        return [row[0] for row in admin.execute("SELECT session_id FROM postrun.sessions ORDER BY 1").fetchall()]


def test_mirror_push_sends_the_others_and_names_the_refused_session_until_it_goes_in(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    root = tmp_path / "claude"
    write_sessions(root)
    assert run_postrun("ingest", "--agent", "claude-code", str(root), env=mirror_env).returncode == 0
    for others in (2, 0):  # refused again by the next push: retried, never dropped
        pushed = run_postrun("mirror", "push", env=mirror_env)
        assert pushed.returncode == 1, pushed.stdout + pushed.stderr
        lines = pushed.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"error: mirror 127.0.0.1/{mirror.database}: session {REFUSED}: index row size")
        assert lines[0].endswith("(kept queued)"), lines
        assert f"pushed {others} sessions" in pushed.stdout and pushed.stdout.rstrip().endswith("; 1 session waiting")
        assert mirrored(mirror) == sorted(OTHERS)
    # The team's DBA makes room (an index on a hash of the path): the next push sends it.
    with mirror.server.admin(mirror.database) as admin:
        admin.execute("DROP INDEX postrun.steps_by_path")
        admin.execute("CREATE INDEX steps_by_path ON postrun.steps USING hash (path)")
    last = run_postrun("mirror", "push", env=mirror_env)
    assert last.returncode == 0, last.stderr
    assert "pushed 1 session" in last.stdout
    assert mirrored(mirror) == sorted((REFUSED, *OTHERS))
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(Path(mirror_env["POSTRUN_DB"]), admin) == []


def test_capture_mirrors_the_others_and_logs_the_refused_session_once(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    root = tmp_path / "claude"
    write_sessions(root)
    env = mirror_env | {
        "POSTRUN_AGENTS": "claude-code",
        "POSTRUN_CLAUDE_DIR": str(root),
        "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        "POSTRUN_POLL_SECONDS": "0.5",
    }
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_until(lambda: mirrored(mirror) == sorted(OTHERS) or None, what="the other sessions mirrored")
        refused = capture.wait_for_log(rf"ERROR .*mirror 127\.0\.0\.1/{mirror.database}: session {REFUSED}: ")
        assert "index row size" in refused[0] and refused[0].endswith("; kept queued"), refused
        # Other sessions keep flowing while it waits.
        later = Transcript("c0ffee00-0000-4000-8000-000000000004", CWD)
        later.prompt("and this")
        later.text("msg_1", "Done.")
        later.write(root / "-home-dev-work-app" / f"{later.session_id}.jsonl")
        capture.wait_until(lambda: later.session_id in mirrored(mirror) or None, what="a later session mirrored")
        assert len(capture.lines(rf"session {REFUSED}: ")) == 1  # said once, not at every push
        assert capture.lines(rf"mirror 127\.0\.0\.1/{mirror.database}: caught up") == []
    finally:
        capture.stop()
        capture.kill()
