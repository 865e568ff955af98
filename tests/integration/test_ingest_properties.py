"""Properties of ingest through the real store (hypothesis).

- every prefix of a valid messages file either ingests or raises the mid-write error,
  and then leaves the store exactly as it was;
- ingesting the same files twice writes nothing the second time;
- any string a user or tool produced survives the trip through Cline's file, the
  adapter and the store (lone surrogates, which UTF-8 cannot hold, become U+FFFD).
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from postrun.agents.cline import SessionLocation
from postrun.errors import NotParseableYet
from postrun.ingest.ingester import Ingester
from postrun.store.db import Database
from postrun.store.query import load_envelope
from tests.conftest import FIXTURES

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SESSIONS = sorted(
    path.parent
    for path in FIXTURES.glob("cline*/*/data/sessions/*/*.messages.json")
    if path.name == f"{path.parent.name}.messages.json" and "halfw" not in path.name
)
PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def copy_session(folder: Path, tmp_path: Path) -> SessionLocation:
    target = tmp_path / "data" / "sessions" / folder.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(folder, target)
    return SessionLocation.in_root(target.parent, folder.name)


def ingester(tmp_path: Path) -> Ingester:
    return Ingester(Database.open(tmp_path / "store" / "postrun.db"), max_bytes=2**26, clock=lambda: NOW)


@pytest.mark.parametrize("folder", SESSIONS, ids=[folder.name for folder in SESSIONS])
@PROPERTY_SETTINGS
@given(fraction=st.floats(min_value=0, max_value=1))
def test_every_prefix_ingests_or_is_torn_and_changes_nothing(tmp_path: Path, folder: Path, fraction: float) -> None:
    location = copy_session(folder, tmp_path)
    complete = location.messages.read_bytes()
    store = ingester(tmp_path)
    try:
        store.ingest(location)
        before = load_envelope(store.database, location.session_id)
        cut = int(len(complete) * fraction)
        location.messages.write_bytes(complete[:cut])
        try:
            store.ingest(location)
        except NotParseableYet:
            assert load_envelope(store.database, location.session_id) == before
        else:
            # Only a prefix that is itself one whole JSON value (plus whitespace) can ingest.
            assert complete[:cut].strip() == complete.strip()
    finally:
        store.database.close()


@pytest.mark.parametrize("folder", SESSIONS, ids=[folder.name for folder in SESSIONS])
def test_ingesting_twice_writes_nothing_the_second_time(tmp_path: Path, folder: Path) -> None:
    location = copy_session(folder, tmp_path)
    store = ingester(tmp_path)
    try:
        first, _ = store.ingest(location)
        second, _ = store.ingest(location)
    finally:
        store.database.close()
    assert first.status == "ingested" and first.rows_written > 0
    assert (second.status, second.rows_written) == ("unchanged", 0)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Any character, lone surrogates and NUL included; "[" and "<" are left out because they can
# start Cline's own markers ("[SYSTEM]", "[Command exited with code 1]", "<user_input>").
any_text = st.text(st.characters(exclude_categories=(), exclude_characters="[<"), max_size=300)


@PROPERTY_SETTINGS
@given(prompt=any_text, output=any_text)
@example(prompt="lone \ud800 surrogate and NUL \x00", output="\udfff at the start, é ✓ \x00 inside")
def test_any_string_survives_file_adapter_and_store(tmp_path: Path, prompt: str, output: str) -> None:
    folder = tmp_path / "data" / "sessions" / "1790000000000_anyst"
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "version": 1,
        "messages": [
            {"id": "m1", "role": "user", "ts": 1790000000000, "content": [{"type": "text", "text": prompt}]},
            {
                "id": "m2",
                "role": "assistant",
                "ts": 1790000001000,
                "content": [{"type": "tool_use", "id": "c1", "name": "run_commands", "input": {"commands": ["x"]}}],
            },
            {
                "id": "m3",
                "role": "user",
                "ts": 1790000002000,
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [{"query": "x", "result": output, "success": True}],
                    }
                ],
            },
        ],
    }
    # As Cline (JSON.stringify) writes it: lone surrogates become \\udXXX escapes.
    (folder / f"{folder.name}.messages.json").write_text(json.dumps(document), encoding="ascii")
    store = ingester(tmp_path)
    try:
        store.ingest(SessionLocation.in_root(folder.parent, folder.name))
        steps = load_envelope(store.database, folder.name)["steps"]
    finally:
        store.database.close()
    stored = {step["id"]: step["payload"] for step in steps}

    def readable(text: str) -> str:
        return _LONE_SURROGATE.sub("\ufffd", text)

    if prompt.strip():
        assert stored["m1#0"]["text"] == readable(prompt).strip()
    assert stored["c1#0"].get("stdout", "") == readable(output)


def test_a_session_beyond_sqlite_limits_is_its_own_failure_not_the_stores(tmp_path: Path) -> None:
    import apsw

    from postrun.errors import SourceError, StoreError

    basic = FIXTURES / "cline" / "basic_act" / "data" / "sessions" / "1790000000000_basic"
    location = copy_session(basic, tmp_path)
    store = ingester(tmp_path)
    try:
        # The same error SQLite gives for a value over its 1 GB limit, at a size a test can afford.
        store.database.connection.limit(apsw.SQLITE_LIMIT_LENGTH, 300)
        with pytest.raises(SourceError, match="too large for the store") as caught:
            store.ingest(location)
        assert not isinstance(caught.value, StoreError)
        assert caught.value.where == str(location.messages)
        assert store.database.execute("SELECT count(*) FROM sessions").get == 0
    finally:
        store.database.close()
