"""A store of the previous release (v2) migrates in place: every record and history row kept,
and search finds exactly what it found before, on the shared fixtures' sessions."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from postrun.agents.cline import approval_snapshot, list_sessions, map_session, read_session
from postrun.errors import PostrunError
from postrun.records import MappedSession, StepRow
from postrun.schema import SchemaError
from postrun.store import codec
from postrun.store.db import STORE_VERSION, Database
from postrun.store.query import history, load_envelope
from postrun.store.search import SearchHit, search, search_query
from postrun.store.write import upsert_session
from tests.conftest import FIXTURES
from tests.support.old_store import write_old_store

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MAX_BYTES = 64 * 2**20


def fixture_sessions() -> list[MappedSession]:
    mapped: list[MappedSession] = []
    for root in sorted(FIXTURES.glob("cline*/*/data/sessions")):
        for location in list_sessions(root).sessions:
            try:
                files = read_session(location, max_bytes=MAX_BYTES)
                approvals = approval_snapshot(location.data_dir, files.client_source, max_bytes=MAX_BYTES)
                session, _ = map_session(files, approvals)
                session.validate()
            except (PostrunError, SchemaError):
                continue  # the fixtures' torn and junk files: never stored
            mapped.append(session)
    return mapped


def frequent_words(db: Path, count: int = 40) -> list[str]:
    """The words the v2 index holds most often, plus a few rare ones (queries not chosen by hand)."""
    connection = apsw.Connection(str(db))
    try:
        connection.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, step_search, 'row')")
        rows = connection.execute("SELECT term FROM temp.words ORDER BY doc DESC, term").fetchall()
    finally:
        connection.close()
    terms = [str(term) for (term,) in rows]
    return terms[:count] + terms[-5:]


def hits(database: Database, words: list[str]) -> list[list[SearchHit]]:
    """Every hit (ranked, with its snippet) of each word alone, and of pairs of words."""
    queries = [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]
    return [search(database, search_query(query), limit=500) for query in queries]


def assert_same_hits(
    found: list[list[SearchHit]], expected: list[list[SearchHit]], sessions: list[MappedSession]
) -> None:
    """The same steps in the same order with the same snippets; only the snippet of a step's
    raw JSON (an unknown block or tool) may differ, by its keys' order: the index is fed
    from the stored canonical JSON, whose keys are sorted."""
    with_raw = {(m.id, row.id) for m in sessions for row in m.steps if "raw" in row.record["payload"]}
    assert [[dataclasses.replace(h, snippet="") for h in q] for q in found] == [
        [dataclasses.replace(h, snippet="") for h in q] for q in expected
    ]
    for mine, theirs in zip(itertools.chain(*found), itertools.chain(*expected), strict=True):
        if (mine.session_id, mine.step_id) not in with_raw:
            assert mine.snippet == theirs.snippet


@pytest.fixture(scope="module")
def sessions() -> list[MappedSession]:
    found = fixture_sessions()
    assert len(found) >= 8
    return found


def test_a_v2_store_migrates_in_place_with_every_record_history_row_and_search_hit(
    tmp_path: Path, sessions: list[MappedSession]
) -> None:
    old = tmp_path / "v2.db"
    write_old_store(old, sessions, version=2, history=3)
    words = frequent_words(old)
    raw = apsw.Connection(str(old))
    codec.register(raw)  # the queries read records through postrun_record (text ones as they are)
    raw.execute("CREATE TEMP TABLE step_flags (session_id, step_id, kind, severity)")  # read by today's query
    before = hits(Database(old, raw), words)  # the v2 schema as it is, not migrated
    raw.close()
    assert sum(map(len, before)) > 100

    fresh = tmp_path / "fresh.db"
    with Database.open(fresh) as database:
        for mapped in sessions:
            upsert_session(database, mapped, now=T0, captured_on="host")
        assert_same_hits(hits(database, words), before, sessions)  # a store written now finds the same
        expected = {mapped.id: load_envelope(database, mapped.id) for mapped in sessions}

    with Database.open(old) as database:
        assert database.user_version() == STORE_VERSION
        assert_same_hits(hits(database, words), before, sessions)
        for session_id, envelope in expected.items():
            assert load_envelope(database, session_id) == envelope
        kept = history(database, sessions[0].id)
        assert [entry.record["payload"]["text"] for entry in kept] == [f"earlier version {n}" for n in range(3)]
        assert database.execute("SELECT count(*) FROM steps WHERE typeof(record) != 'blob'").get == 0
        database.execute("INSERT INTO step_search (step_search, rank) VALUES ('integrity-check', 1)")
        # A step changed after the migration: the index forgets its old text, finds the new one.
        first = sessions[0]
        position, step = next((i, row) for i, row in enumerate(first.steps) if row.record["payload"].get("text"))
        old_word = next(word for word in words if word in step.record["payload"]["text"].lower())
        changed = StepRow.build(step.record | {"payload": {**step.record["payload"], "text": "zebracorn"}})
        steps = [*first.steps[:position], changed, *first.steps[position + 1 :]]
        upsert_session(database, dataclasses.replace(first, steps=steps), now=T0, captured_on="host")
        assert [h.step_id for h in search(database, search_query("zebracorn"))] == [step.id]
        assert step.id not in {(h.session_id, h.step_id) for h in search(database, search_query(old_word), limit=500)}
        database.execute("INSERT INTO step_search (step_search, rank) VALUES ('integrity-check', 1)")


def test_a_record_is_kept_compressed_and_read_back_exactly() -> None:
    blob = b'{"payload":{"text":"' + b"abc " * 500 + b'"}}'
    assert len(codec.pack(blob)) < len(blob) // 10
    assert codec.unpack(codec.pack(blob)) == blob
    assert codec.unpack(blob.decode()) == blob  # a record from before compression
