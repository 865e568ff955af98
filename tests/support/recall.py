"""A store for the recall tests, built by the real ``postrun ingest``, and the SDK's client over stdio.

The store holds every Cline fixture, plus two sessions derived from ``cline/basic_act``:
``PLANTED`` (secrets planted in a prompt, an output and an edit; its workspace under the test's
home) and a session active now (its times moved to the last few minutes).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from tests.conftest import FIXTURES, isolated_environ, postrun_command, run_postrun
from tests.support.secret_samples import SAMPLES

BASIC = "1790000000000_basic"
PLANTED = "1790000900000_plant"
LIVE_WORD = "zebrafish"  # only the active session says it
PLANTED_SECRETS = (SAMPLES["aws_key"][0], SAMPLES["github_token"][0], SAMPLES["anthropic_key"][0])
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


@dataclass(frozen=True)
class RecallStore:
    env: dict[str, str]
    db: Path
    home: Path
    live_id: str


def derived_session(
    case: Path, root: Path, session_id: str, *, shift_ms: int = 0, texts: Mapping[str, str] | None = None
) -> None:
    """The session of the fixture ``case`` copied into the sessions folder ``root`` as ``session_id``:
    its times moved by ``shift_ms`` and each ``texts`` key replaced by its value in every string."""
    (source,) = (case / "data" / "sessions").iterdir()
    replacements = {source.name: session_id, **(texts or {})}

    def rewrite(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: rewrite(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [rewrite(item) for item in value]
        if isinstance(value, int) and not isinstance(value, bool) and key in ("ts", "createdAt"):
            return value + shift_ms
        if isinstance(value, str):
            if _ISO.fullmatch(value):
                return _shifted(value, shift_ms)
            for old, new in replacements.items():
                value = value.replace(old, new)
        return value

    folder = root / session_id
    folder.mkdir(parents=True)
    for file in source.iterdir():
        content = rewrite(orjson.loads(file.read_bytes()))
        (folder / file.name.replace(source.name, session_id)).write_bytes(orjson.dumps(content))


def _shifted(stamp: str, shift_ms: int) -> str:
    from datetime import UTC, datetime, timedelta

    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(milliseconds=shift_ms)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_recall_store(tmp: Path) -> RecallStore:
    tmp.mkdir(parents=True, exist_ok=True)
    env = isolated_environ(tmp)
    home = Path(env["HOME"])
    extra = tmp / "cline" / "sessions"
    basic = FIXTURES / "cline" / "basic_act"
    aws, github, anthropic = PLANTED_SECRETS
    derived_session(
        basic,
        extra,
        PLANTED,
        shift_ms=900_000,
        texts={
            "/home/dev/app": f"{home}/app",
            "Fix the failing date test": f"Fix the failing date test with the deploy key {anthropic}",
            "FAIL test/date.test.ts": f"FAIL test/date.test.ts\naws_access_key_id = {aws}",
            "export const x = 0": f"export const token = '{github}'",
            "npm run lint": "npx eslint src/date.ts",
        },
    )
    # Its last message 2 minutes ago: active, by any measure of the last 10 minutes.
    now_ms = int(time.time() * 1000)
    started_ms = now_ms - 120_000 - 42_000  # basic_act runs 42 s
    live_id = f"{started_ms}_livee"
    derived_session(
        basic,
        extra,
        live_id,
        shift_ms=started_ms - 1790000000000,
        texts={"/home/dev/app": "/home/dev/live", "Tests: 12 passed": f"Tests: 12 passed {LIVE_WORD}"},
    )
    roots = [
        str(case / "data" / "sessions") for kind in ("cline", "cline-real") for case in (FIXTURES / kind).iterdir()
    ]
    result = run_postrun("ingest", *sorted(r for r in roots if Path(r).is_dir()), str(extra), env=env)
    for session_id in (BASIC, PLANTED, live_id, "1790000100000_review"):
        assert f"ingested cline session {session_id}" in result.stdout, result.stdout + result.stderr
    return RecallStore(env, Path(env["POSTRUN_DB"]), home, live_id)


def store_fingerprint(db: Path) -> tuple[str, int, list[str]]:
    """The store file's hash and mtime, and what its folder holds (names and sizes)."""
    listing = sorted(f"{entry.name} {entry.stat().st_size}" for entry in db.parent.iterdir())
    return hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns, listing


class Client:
    """The SDK's own client, over stdio to a real ``postrun mcp``, called from synchronous tests."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def call(self, tool: str, **arguments: Any) -> CallToolResult:
        result = self.portal.call(self.session.call_tool, tool, arguments)
        assert isinstance(result, CallToolResult)
        return result

    def data(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured answer of a call that must succeed."""
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content

    def error(self, tool: str, **arguments: Any) -> str:
        """The one-line reason of a call that must fail."""
        result = self.call(tool, **arguments)
        assert result.is_error, result.structured_content
        (content,) = result.content
        text = getattr(content, "text", "")
        assert text and "\n" not in text, text
        return str(text)

    def run(self, method: Callable[..., Any], *args: Any) -> Any:
        return self.portal.call(method, *args)


@contextmanager
def mcp_client(env: Mapping[str, str], stderr: TextIO, *args: str) -> Iterator[Client]:
    program, *more = postrun_command()
    params = StdioServerParameters(command=program, args=[*more, *args, "mcp"], env=dict(env), cwd=os.getcwd())
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_client(params, errlog=stderr)) as (read, write),
        portal.wrap_async_context_manager(ClientSession(read, write)) as session,
    ):
        portal.call(session.initialize)
        yield Client(portal, session)
