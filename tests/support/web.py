"""Helpers for the review app tests: the real `postrun serve` process, a fixture store, raw HTTP.

The store is ingested from the real fixtures by the real `postrun ingest`, plus hand-made
sessions written through the store's own writer: one with a sub-agent nested under the step
that started it (the helper-transcript contract), one full of hostile content.
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from postrun.records import MappedSession, SessionExtras, StepRow
from postrun.store.db import Database
from postrun.store.write import upsert_session
from tests.conftest import FIXTURES, postrun_command, run_postrun
from tests.support.builders import command_step, message_step, session_record
from tests.support.capture_process import RunningProcess, wait_until

HELPER_SESSION = "1790000600000_helpr"
HELPER_ACTOR = "agent_1790000600100_abcdef"
HOSTILE_SESSION = "1790000700000_hostl"
BIG_SESSION = "1790000800000_bigss"
BIG_TURNS = 8
BIG_STEPS_PER_TURN = 40
CANARY = "__postrun_pwned"
_LISTENING = re.compile(r"^postrun serve: (http://(127\.[\d.]+|\[::1\]):(\d+)/) \(open with: postrun open\)$")
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class ServeProcess(RunningProcess):
    """A running `postrun serve --port 0`; its stdout line names the port."""

    def __init__(self, env: Mapping[str, str], workdir: Path, *args: str) -> None:
        self.env = dict(env)
        self.log_path = workdir / f"serve-{os.getpid()}-{time.monotonic_ns()}.log"
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                [*postrun_command(), "serve", "--port", "0", *args],
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().rstrip("\n")
        match = _LISTENING.match(line)
        if match is None:
            self.kill()
            raise AssertionError(f"serve did not start: {line!r}\n{self.log_path.read_text()}")
        self.url = match.group(1)
        self.host = match.group(2)
        self.port = int(match.group(3))

    def login_url(self) -> str:
        result = run_postrun("open", "--print", env=self.env)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: str


def request(
    port: int,
    path: str,
    *,
    method: str = "GET",
    host: str | None = None,
    cookie: str | None = None,
    headers: Mapping[str, str] | None = None,
    body: str | None = None,
    address: str = "127.0.0.1",
) -> Answer:
    """One raw HTTP request to ``address`` (no redirects followed, no cookies kept)."""
    connection = http.client.HTTPConnection(address, port, timeout=20)
    try:
        sent = {"Host": host or f"{address}:{port}", **(headers or {})}
        if cookie:
            sent["Cookie"] = cookie
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return Answer(
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode("utf-8", "replace"),
        )
    finally:
        connection.close()


def sign_in(server: ServeProcess) -> str:
    """Redeem a login link; the session cookie as a ``Cookie`` header value."""
    login = server.login_url()
    answer = request(server.port, login[len(server.url) - 1 :], address=server.host)
    assert answer.status == 303, answer
    cookie = answer.headers["set-cookie"]
    return cookie.split(";", 1)[0]


def ingest_fixtures(env: Mapping[str, str]) -> None:
    roots = sorted(
        str(case / "data" / "sessions")
        for kind in ("cline", "cline-real")
        for case in (FIXTURES / kind).iterdir()
        if (case / "data" / "sessions").is_dir()
    )
    result = run_postrun("ingest", *roots, env=env)
    # mid_write_and_junk holds a torn file on purpose: that one session fails, the rest are stored.
    assert "ingested cline session 1790000000000_basic" in result.stdout, result.stderr


def _step(seq: int, session_id: str, **fields: Any) -> dict[str, Any]:
    record = message_step(seq, "", session_id=session_id)
    record.update(fields)
    return record


def helper_session() -> MappedSession:
    """A lead that starts a sub-agent; the helper's steps carry its actor id (ids ``<actor>/<step>``)."""
    sid = HELPER_SESSION
    steps = [
        message_step(0, "Audit svc/ with a helper", role="user", session_id=sid),
        _step(
            1,
            sid,
            id="call_spawn#0",
            type="other",
            decision="auto",
            payload={
                "tool_name": "spawn_agent",
                "raw": {"actor_id": HELPER_ACTOR, "input": {"task": "Review config.py"}, "result": {"text": "done"}},
            },
        ),
        _step(
            2,
            sid,
            id=f"{HELPER_ACTOR}/call_h1#0",
            actor_id=HELPER_ACTOR,
            type="read",
            decision="auto",
            payload={"path": "/home/dev/app/svc/config.py"},
        ),
        {
            **command_step(3, "python svc/main.py", "8080\n", exit_code=0, session_id=sid),
            "id": f"{HELPER_ACTOR}/call_h2#0",
            "actor_id": HELPER_ACTOR,
        },
        message_step(4, "HELPER-REPLY config.py sets DEBUG", session_id=sid, step_id=f"{HELPER_ACTOR}/msg_h3#0")
        | {"actor_id": HELPER_ACTOR},
        message_step(5, "The helper found DEBUG left on.", session_id=sid),
    ]
    return one_turn_session(
        sid,
        steps,
        [{"id": HELPER_ACTOR, "type": "subagent", "parent_id": "root", "label": "config-reviewer"}],
        started="2026-09-21T15:00:00.000Z",
    )


HOSTILE = {
    "script": f"<script>window.{CANARY}=1</script>",
    "img": f'<img src=x onerror="window.{CANARY}=2">',
    "js_url": f"javascript:window.{CANARY}=3",
    "css": '</style><style>body{display:none}</style><div style="background:url(http://203.0.113.9/x)">',
    "link": f'<a href="javascript:window.{CANARY}=4">click</a><iframe src="http://203.0.113.9/"></iframe>',
    "control": "bell\x07 esc\x1b[31m nul\x00 del\x7f end",
}


def hostile_session() -> MappedSession:
    sid = HOSTILE_SESSION
    every = " ".join(HOSTILE.values())
    huge = "A" * 2_000_000 + HOSTILE["script"]  # a 2 MB line
    steps = [
        message_step(0, f"{every} prompt", role="user", session_id=sid),
        {
            **command_step(1, f"echo {HOSTILE['img']}", f"{huge}\n{every}\n", exit_code=1, session_id=sid),
            "flags": [{"kind": HOSTILE["script"], "severity": "danger", "reason": every}],
        },
        _step(
            2,
            sid,
            id="call_edit#0",
            type="edit",
            decision="accepted",
            payload={
                "path": f"/home/dev/{HOSTILE['js_url']}/{HOSTILE['css']}.py",
                "is_full_write": False,
                "old_string": HOSTILE["link"],
                "new_string": every,
            },
        ),
        _step(
            3,
            sid,
            id="call_tool#0",
            type="other",
            decision="auto",
            payload={"tool_name": HOSTILE["script"], "raw": {"input": every}},
        ),
        message_step(4, every, role="thinking", session_id=sid),
        message_step(5, f"HOSTILE-END {every}", session_id=sid),
    ]
    session = session_record(sid, started_at="2026-09-21T16:00:00.000Z", workspace={"root": f"/home/{HOSTILE['img']}"})
    return one_turn_session(sid, steps, [], session=session, title=every)


def big_session() -> MappedSession:
    """More steps than a page shows inline: its earlier turns load when opened."""
    sid = BIG_SESSION
    started = "2026-09-21T17:00:00.000Z"
    steps = []
    for seq in range(BIG_TURNS * BIG_STEPS_PER_TURN):
        turn = seq // BIG_STEPS_PER_TURN + 1
        if seq % BIG_STEPS_PER_TURN == 0:
            step = message_step(seq, f"BIG-PROMPT-{turn}", role="user", session_id=sid, turn_id=f"turn:{turn}")
        else:
            step = command_step(seq, f"echo big-{seq}", f"BIG-OUTPUT-{seq}\n", exit_code=0, session_id=sid)
            step["turn_id"] = f"turn:{turn}"
        steps.append(step)
    mapped = one_turn_session(sid, steps, [], started=started)
    turns = [{**mapped.turns[0], "id": f"turn:{n}", "index": n} for n in range(1, BIG_TURNS + 1)]
    return MappedSession(
        agent="cline",
        session=mapped.session,
        segments=mapped.segments,
        actors=mapped.actors,
        turns=turns,
        steps=mapped.steps,
        extras=mapped.extras,
    )


LONG_TURN_SESSION = "1790000810000_longt"
LONG_TURN_STEPS = 2_600


def long_turn_session() -> MappedSession:
    """One prompt, then 2,600 steps in the same turn (a long autonomous run): more than a page
    shows at once even though there are no earlier turns to fold."""
    sid = LONG_TURN_SESSION
    steps = [message_step(0, "LONG-PROMPT run every check until green", role="user", session_id=sid)]
    for seq in range(1, LONG_TURN_STEPS):
        if seq % 3 == 0:  # a reply of a few paragraphs, shown inline
            steps.append(
                message_step(seq, f"LONG-REPLY-{seq} " + "the checks are still running; " * 60, session_id=sid)
            )
        else:
            steps.append(
                command_step(seq, f"make check PART={seq}", f"LONG-OUTPUT-{seq}\n", exit_code=0, session_id=sid)
            )
    return one_turn_session(sid, steps, [], started="2026-09-21T18:00:00.000Z")


def one_turn_session(
    session_id: str,
    steps: list[dict[str, Any]],
    helpers: list[dict[str, Any]],
    *,
    started: str = "2026-09-21T15:00:00.000Z",
    session: dict[str, Any] | None = None,
    title: str | None = None,
    agent: str = "cline",
) -> MappedSession:
    """A session of one turn (mode act) and one segment, its lead and ``helpers`` its actors."""
    return MappedSession(
        agent=agent,
        session=session
        or session_record(session_id, started_at=started, ended_at=started.replace(":00.000", ":30.000")),
        segments=[{"index": 0, "start_reason": "start", "started_at": started, "source_files": []}],
        actors=[{"id": "root", "type": "root", "label": "lead"}, *helpers],
        turns=[
            {
                "id": "turn:1",
                "session_id": session_id,
                "segment_index": 0,
                "actor_id": "root",
                "index": 1,
                "mode": "act",
                "started_at": started,
                "step_ids": [],
            }
        ],
        steps=[StepRow.build(step) for step in steps],
        extras=SessionExtras(agent_title=title),
    )


def store_hand_made(db: Path) -> None:
    database = Database.open(db)
    try:
        for mapped in (helper_session(), hostile_session(), big_session()):
            mapped.validate()
            upsert_session(database, mapped, now=datetime.now(UTC), captured_on="tests")
    finally:
        database.close()


def wait_for(condition: Any, what: str, timeout: float = 20.0) -> Any:
    return wait_until(condition, timeout=timeout, what=what)
