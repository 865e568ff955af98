"""The review app's store side over a real SQLite file: verdicts, the filtered session page, reads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from postrun.errors import NotFound, UsageError
from postrun.store import browse
from postrun.store.db import Database
from postrun.store.migrations import MIGRATIONS
from postrun.store.search import search, search_query
from postrun.store.verdicts import current_verdicts, record_verdict, verdict_history
from postrun.store.write import upsert_session
from postrun.views import reviewed_sessions
from tests.support.builders import command_step, mapped_session, message_step, session_record

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    database = Database.open(tmp_path / "store" / "postrun.db")
    rows = [
        ("1790000000001_aaaaa", "2026-11-01T10:00:00.000Z", "/w/one", False, False, True, "Fix the parser"),
        ("1790000000002_bbbbb", "2026-11-02T10:00:00.000Z", "/w/one", True, False, True, "Run the suite"),
        ("1790000000003_ccccc", "2026-11-03T10:00:00.000Z", "/w/two", False, True, False, "Delete the cache"),
        ("1790000000004_ddddd", "2026-11-04T10:00:00.000Z", "/w/two", True, True, True, "Deploy it"),
    ]
    for session_id, started, root, failed, flagged, ended, prompt in rows:
        command = command_step(1, "rm -rf build", "ok\n", exit_code=1 if failed else 0, session_id=session_id)
        if flagged:
            command["flags"] = [{"kind": "dangerous_command", "severity": "danger", "reason": "rm -rf"}]
        steps = [message_step(0, prompt, role="user", session_id=session_id), command]
        fields = {"started_at": started, "workspace": {"root": root}}
        if ended:
            fields["ended_at"] = started.replace("10:00", "10:30")
        mapped = mapped_session(steps, session_id=session_id, session=session_record(session_id, **fields))
        upsert_session(database, mapped, now=NOW, captured_on="tests")
    yield database
    database.close()


def ids(page: browse.SessionPage) -> list[str]:
    return [row.id[-5:] for row in page.rows]


def test_filters_combine_and_keep_newest_first(database: Database) -> None:
    page = browse.session_page(database, browse.SessionFilter())
    assert ids(page) == ["ddddd", "ccccc", "bbbbb", "aaaaa"] and not page.has_more
    row = page.rows[0]
    assert (row.title, row.workspace, row.steps, row.failed_steps, row.flagged_steps) == (
        "Deploy it",
        "/w/two",
        2,
        1,
        1,
    )
    assert ids(browse.session_page(database, browse.SessionFilter(failed=True))) == ["ddddd", "bbbbb"]
    assert ids(browse.session_page(database, browse.SessionFilter(flagged=True))) == ["ddddd", "ccccc"]
    assert ids(browse.session_page(database, browse.SessionFilter(failed=True, flagged=True))) == ["ddddd"]
    assert ids(browse.session_page(database, browse.SessionFilter(workspace="/w/one"))) == ["bbbbb", "aaaaa"]
    assert ids(browse.session_page(database, browse.SessionFilter(state="open"))) == ["ccccc"]
    assert ids(browse.session_page(database, browse.SessionFilter(text="SUITE"))) == ["bbbbb"]
    window = browse.SessionFilter(since_utc="2026-11-02T00:00:00.000Z", until_utc="2026-11-04T00:00:00.000Z")
    assert ids(browse.session_page(database, window)) == ["ccccc", "bbbbb"]


def test_verdicts_keep_every_change_and_filter_the_list(database: Database) -> None:
    target = "1790000000002_bbbbb"
    record_verdict(database, target, "needs_follow_up", "  flaky test  ", now=NOW)
    record_verdict(database, target, "looks_good", "", now=NOW + timedelta(minutes=5))
    history = verdict_history(database, target)
    assert [(v.state, v.note, v.at) for v in history] == [
        ("looks_good", "", "2026-11-30T12:05:00.000Z"),
        ("needs_follow_up", "flaky test", "2026-11-30T12:00:00.000Z"),
    ]
    assert current_verdicts(database, [target, "1790000000001_aaaaa"])[target].state == "looks_good"
    reviewed = browse.session_page(database, browse.SessionFilter(verdict="looks_good"))
    assert ids(reviewed) == ["bbbbb"] and reviewed.rows[0].verdict is not None
    assert "bbbbb" not in ids(browse.session_page(database, browse.SessionFilter(verdict="unreviewed")))
    assert ids(browse.session_page(database, browse.SessionFilter(verdict="needs_follow_up"))) == []
    with pytest.raises(UsageError, match="unknown verdict 'great'"):
        record_verdict(database, target, "great", "", now=NOW)
    with pytest.raises(UsageError, match="at most 2000 characters"):
        record_verdict(database, target, "looks_good", "x" * 2001, now=NOW)
    with pytest.raises(NotFound):
        record_verdict(database, "1790000000009_nopee", "looks_good", "", now=NOW)
    assert len(verdict_history(database, target)) == 2


def test_sessions_by_verdict_through_the_library(database: Database) -> None:
    record_verdict(database, "1790000000001_aaaaa", "needs_follow_up", "", now=NOW)
    pairs = reviewed_sessions(database.path, verdict="needs_follow_up")
    assert [(s.id, v.state if v else None) for s, v in pairs] == [("1790000000001_aaaaa", "needs_follow_up")]
    assert [s.id for s, _ in reviewed_sessions(database.path, verdict="unreviewed", limit=2)] == [
        "1790000000004_ddddd",
        "1790000000003_ccccc",
    ]


def test_change_marker_moves_with_sessions_and_verdicts(database: Database) -> None:
    target = "1790000000003_ccccc"
    before_all, before_one = browse.change_marker(database), browse.change_marker(database, target)
    record_verdict(database, target, "looks_good", "", now=NOW)
    assert browse.change_marker(database) != before_all
    assert browse.change_marker(database, target) != before_one


def test_pages_of_fifty(database: Database) -> None:
    for i in range(browse.PAGE_SIZE):
        session_id = f"17800000{i:05d}_page{i % 10}"
        mapped = mapped_session(
            [message_step(0, "hi", session_id=session_id)],
            session_id=session_id,
            session=session_record(session_id, started_at=f"2026-10-01T10:{i:02d}:00.000Z"),
        )
        upsert_session(database, mapped, now=NOW, captured_on="tests")
    first = browse.session_page(database, browse.SessionFilter())
    second = browse.session_page(database, browse.SessionFilter(page=2))
    assert len(first.rows) == browse.PAGE_SIZE and first.has_more
    assert len(second.rows) == 4 and not second.has_more
    assert {row.id for row in first.rows}.isdisjoint(row.id for row in second.rows)


def test_a_store_of_the_previous_release_migrates_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = apsw.Connection(str(path))
    for migration in MIGRATIONS[:2]:  # what the previous release shipped
        old.execute(migration)
    old.execute("pragma user_version=2")
    old.close()
    database = Database.open(path)
    try:
        assert database.user_version() == len(MIGRATIONS)
        mapped = mapped_session(
            [message_step(0, "hi", session_id="1790000000005_eeeee")],
            session_id="1790000000005_eeeee",
            session=session_record("1790000000005_eeeee"),
        )
        upsert_session(database, mapped, now=NOW, captured_on="tests")
        record_verdict(database, "1790000000005_eeeee", "looks_good", "", now=NOW)
        assert browse.session_page(database, browse.SessionFilter(verdict="looks_good")).rows
    finally:
        database.close()


def test_search_within_a_window_ranks_only_the_newest_matches(database: Database) -> None:
    stored = []
    for i in range(12):
        session_id = f"17810000{i:05d}_needl"
        words = "needle " * (12 - i)  # the oldest match best
        mapped = mapped_session(
            [command_step(0, f"echo {words}", "ok\n", session_id=session_id)],
            session_id=session_id,
            session=session_record(session_id),
        )
        upsert_session(database, mapped, now=NOW, captured_on="tests")
        stored.append(session_id)
    everything = search(database, search_query("needle"), limit=3)
    assert [hit.session_id for hit in everything] == stored[:3]
    newest = search(database, search_query("needle"), limit=3, window=4)
    assert [hit.session_id for hit in newest] == stored[8:11]
    assert len(search(database, search_query("needle"), limit=50, window=4)) == 4
    assert len(search(database, search_query("needle"), limit=50, window=100)) == 12


def test_forgetting_a_session_removes_its_verdicts_and_their_notes(database: Database) -> None:
    from postrun.store.forget import forget_sessions

    record_verdict(database, "1790000000001_aaaaa", "needs_follow_up", "a private note", now=NOW)
    record_verdict(database, "1790000000002_bbbbb", "looks_good", "", now=NOW)
    forget_sessions(database, ["1790000000001_aaaaa"], now="2026-11-30T12:05:00.000Z")
    assert set(current_verdicts(database, ["1790000000001_aaaaa", "1790000000002_bbbbb"])) == {"1790000000002_bbbbb"}
    assert verdict_history(database, "1790000000001_aaaaa") == []
    assert b"a private note" not in (database.path).read_bytes()


def test_forget_names_the_sessions_of_its_agent_holding_its_step_ids_only_for_an_agent_whose_forks_copy(
    database: Database,
) -> None:
    from postrun.store.forget import forget_plan

    first, *others = ["1790000000001_aaaaa", "1790000000002_bbbbb", "1790000000003_ccccc", "1790000000004_ddddd"]
    # The builders give every session the same step ids, as a fork's copies of its parent's lines.
    assert forget_plan(database, first, ("cline",)).copied_in == tuple(others)
    assert forget_plan(database, first, ("cline",), also=others[:2]).copied_in == (others[2],)  # forgotten with it
    assert forget_plan(database, first, ("claude-code",)).copied_in == ()  # Cline's ids are the session's own
    assert forget_plan(database, first).copied_in == ()
