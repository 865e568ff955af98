"""What an agent read is scanned for secrets, over a real Cline session and a real SQLite store:
the read step is flagged with the masked match, and no part of the store holds the text."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from postrun.agents.cline import SessionLocation
from postrun.ingest.ingester import Ingester
from postrun.ingest.reflag import refresh_flags
from postrun.store.db import Database
from postrun.store.flags import set_rules_version
from postrun.store.query import load_envelope
from tests.support.capture_process import copy_data
from tests.support.secret_corpus import SECRETS
from tests.support.stored_texts import stored_texts

SESSION = "1790000000000_basic"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
READ_SECRETS = [case for case in SECRETS if case.name in ("Stripe live key", "DB_PASS", "Postgres URL password")]


def _read_env_file(root: Path, text: str) -> None:
    """The session's first read becomes a read of the workspace's ``.env`` that returned ``text``."""
    path = root / SESSION / f"{SESSION}.messages.json"
    document = orjson.loads(path.read_bytes())
    for message in document["messages"]:
        for block in message["content"]:
            if block.get("id") == "toolu_read1":
                block["input"]["files"][0]["path"] = "/home/dev/app/.env"
            if block.get("tool_use_id") == "toolu_read1":
                block["content"][0].update(query="/home/dev/app/.env", result=text)
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = copy_data("cline/basic_act", tmp_path / "data")
    _read_env_file(root, "".join(f"{case.text}\n" for case in READ_SECRETS) + "DEBUG=true\n")
    return root


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    database = Database.open(tmp_path / "store" / "postrun.db")
    yield database
    database.close()


def _read_step(database: Database) -> dict[str, object]:
    steps = {step["id"]: step for step in load_envelope(database, SESSION)["steps"]}
    return steps["toolu_read1#0"]


@pytest.mark.parametrize("keep_raw", [False, True])
def test_a_read_secret_is_flagged_masked_and_never_stored(database: Database, root: Path, keep_raw: bool) -> None:
    Ingester(database, max_bytes=2**26, keep_raw=keep_raw).ingest(SessionLocation.in_root(root, SESSION))
    step = _read_step(database)
    assert step["payload"] == {"path": "/home/dev/app/.env"}  # a read step still stores no content
    flags = step["flags"]
    assert isinstance(flags, list)
    reasons = [flag["reason"] for flag in flags if flag["kind"] == "secret_in_output"]
    assert sorted(reasons) == [
        "Stripe key (detect-secrets StripeDetector) in the text read: sk_live_…(32 chars)",
        "credential assignment (postrun) in the text read: …(14 chars)",
        "password in a URL (postrun) in the text read: …(12 chars)",
    ]
    assert {flag["kind"] for flag in flags} == {"secret_in_output", "sensitive_read"}
    secrets = [case.secret.encode() for case in READ_SECRETS]
    assert not any(secret in text for text in stored_texts(database) for secret in secrets)
    files = [Path(f"{database.path}{suffix}") for suffix in ("", "-wal", "-shm")]
    in_files = [secret for secret in secrets for path in files if path.exists() and secret in path.read_bytes()]
    if keep_raw:  # the vault's copy of the agent's file holds it, as the file does
        assert any(secret in text for text in stored_texts(database, vault=True) for secret in secrets)
    else:
        assert in_files == []


def test_a_stored_session_flagged_again_keeps_its_read_flags(database: Database, root: Path) -> None:
    Ingester(database, max_bytes=2**26).ingest(SessionLocation.in_root(root, SESSION))
    before = _read_step(database)["flags"]
    set_rules_version(database, "older rules")
    assert refresh_flags(database, now=NOW, captured_on="tests") == 1
    assert _read_step(database)["flags"] == before


def test_a_changed_read_is_flagged_again(database: Database, root: Path) -> None:
    ingester = Ingester(database, max_bytes=2**26)
    location = SessionLocation.in_root(root, SESSION)
    _, cache = ingester.ingest(location)
    _read_env_file(root, "DEBUG=true\n")  # the same step, another text: its flags follow the text
    ingester.ingest(location, cache)
    assert [flag["kind"] for flag in _read_step(database)["flags"]] == ["sensitive_read"]
