"""Helpers through the real store: a torn helper transcript keeps its stored steps and usage."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from postrun.agents.cline import SessionLocation
from postrun.errors import NotParseableYet
from postrun.ingest.batches import ingest_targets
from postrun.ingest.ingester import Ingester
from postrun.store import vault
from postrun.store.db import Database
from postrun.store.migrations import MIGRATIONS
from postrun.store.query import load_envelope
from tests.conftest import FIXTURES
from tests.support.stores import downgrade_store

SESSION = "1795976749765_vx695"
SUB1, SUB2 = "agent_1795976750621_u6sv2j", "agent_1795976750622_zikz6r"
MAX_BYTES = 64 * 2**20


@pytest.fixture
def location(tmp_path: Path) -> SessionLocation:
    shutil.copytree(FIXTURES / "cline-real" / "h_subagents" / "data", tmp_path / "data")
    return SessionLocation.in_root(tmp_path / "data" / "sessions", SESSION)


def _history(database: Database) -> list[tuple[str, str]]:
    return list(database.execute("SELECT record_id, reason FROM history WHERE kind = 'step' ORDER BY id"))


def test_a_torn_helper_keeps_its_steps_while_the_lead_and_the_other_helper_move_on(
    location: SessionLocation, tmp_path: Path
) -> None:
    with Database.open(tmp_path / "postrun.db") as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES, clock=lambda: datetime(2026, 12, 1, tzinfo=UTC))
        first, _ = ingester.ingest(location)
        before = load_envelope(database, SESSION)
        # The lead gets a new answer, the second helper a new line, the first helper is caught mid-write.
        lead = orjson.loads(location.messages.read_bytes())
        lead["messages"][-1]["content"][0]["text"] += " Done."
        location.messages.write_bytes(orjson.dumps(lead))
        other = location.folder / f"{SUB2}.messages.json"
        other.write_text(other.read_text().replace("printed 8080.", "printed 8080 (checked)."))
        torn = location.folder / f"{SUB1}.messages.json"
        torn.write_bytes(torn.read_bytes()[:700])
        second, _ = ingester.ingest(location)
        after = load_envelope(database, SESSION)
        assert [type(problem) for problem in second.unread] == [NotParseableYet]
        assert second.unread[0].where == str(torn)
        assert second.status == "updated" and first.unread == ()
        steps = {step["id"]: step for step in after["steps"]}
        assert steps["msg_9Br9uU3w#0"]["payload"]["text"].endswith(" Done.")
        assert steps[f"{SUB2}/msg_mK83ZhFO#0"]["payload"]["text"].endswith("(checked).")
        kept = [s for s in before["steps"] if s["actor_id"] == SUB1]
        assert kept and [steps[s["id"]] for s in kept] == kept  # same place, same content
        assert after["actors"] == before["actors"]
        assert after["session"]["metrics"] == before["session"]["metrics"]  # its usage is kept too
        assert "removed" not in {reason for _, reason in _history(database)}
        assert sorted(record_id for record_id, _ in _history(database)) == [
            f"{SUB2}/msg_mK83ZhFO#0",
            "msg_9Br9uU3w#0",
        ]
        # Complete again: nothing to repair, the file is simply read.
        shutil.copyfile(FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions" / SESSION / torn.name, torn)
        third, _ = ingester.ingest(location)
        assert third.unread == () and third.status == "unchanged"


def test_a_vanished_helper_keeps_its_steps_in_history(location: SessionLocation, tmp_path: Path) -> None:
    with Database.open(tmp_path / "postrun.db") as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES)
        ingester.ingest(location)
        (location.folder / f"{SUB2}.messages.json").unlink()
        ingester.ingest(location)
        envelope = load_envelope(database, SESSION)
        assert [actor["id"] for actor in envelope["actors"]] == ["root", SUB1]
        removed = {record_id for record_id, reason in _history(database) if reason == "removed"}
        assert removed == {
            f"{SUB2}/a76932f1-c870-488d-b2d2-a5279a10cdeb#0",
            f"{SUB2}/call_3_0_0#0",
            f"{SUB2}/msg_mK83ZhFO#0",
        }
        assert envelope["session"]["metrics"]["api_requests"] == 4


def test_a_helper_file_given_alone_ingests_its_lead_session(location: SessionLocation, tmp_path: Path) -> None:
    helper = location.folder / f"{SUB1}.messages.json"
    report = ingest_targets([str(helper)], db=tmp_path / "postrun.db", default_root=tmp_path, max_bytes=MAX_BYTES)
    assert [outcome.session_id for outcome in report.outcomes] == [SESSION]
    assert report.notes == [f"{helper}: a helper transcript of session {SESSION}: ingesting that session"]


def test_a_store_of_the_last_release_migrates_in_place_and_takes_helpers(
    location: SessionLocation, tmp_path: Path
) -> None:
    path = tmp_path / "postrun.db"
    with Database.open(path) as database:
        Ingester(database, max_bytes=MAX_BYTES).ingest(location)
    # As the last release (version 2) left it: no vault, no per-actor usage, no flag tables.
    downgrade_store(path, 2)
    with Database.open(path) as database:
        assert database.user_version() == len(MIGRATIONS)
        assert database.execute("SELECT count(*) FROM actors WHERE metrics IS NULL").get == 3
        outcome, _ = Ingester(database, max_bytes=MAX_BYTES).ingest(location)
        assert outcome.status == "unchanged"  # the same records; the usage column is filled in
        stored = dict(database.execute("SELECT id, metrics FROM actors WHERE metrics IS NOT NULL"))
        assert sorted(stored) == [SUB1, SUB2]
        assert orjson.loads(stored[SUB1])["api_requests"] == 2


def test_the_vault_keeps_helper_copies_and_reingest_maps_them(location: SessionLocation, tmp_path: Path) -> None:
    with Database.open(tmp_path / "postrun.db") as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES)
        ingester.ingest(location)
        before = load_envelope(database, SESSION)
        names = {f.name for f in vault.kept_versions(database, SESSION)[-1].files}
        assert {f"sessions/{SESSION}/{SUB1}.messages.json", f"sessions/{SESSION}/{SUB2}.messages.json"} <= names
        # A torn helper: its copy stays the vault's newest, as its steps stay stored.
        torn = location.folder / f"{SUB1}.messages.json"
        torn.write_bytes(torn.read_bytes()[:500])
        ingester.ingest(location)
        assert len(vault.kept_versions(database, SESSION)) == 1
        assert names == {f.name for f in vault.kept_versions(database, SESSION)[-1].files}
        shutil.rmtree(location.folder)
        # Its records from the copies alone: the same session, helpers included.
        database.execute("DELETE FROM history")
        assert ingester.reingest(SESSION).status == "unchanged"
        assert database.execute("SELECT count(*) FROM history").get == 0
        assert load_envelope(database, SESSION) == before
