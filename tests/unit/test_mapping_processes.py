"""How many processes map a catch-up, and what crosses from them to the writer."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation
from postrun.errors import Excluded, NotParseableYet, PostrunError, SourceError, StoreError
from postrun.ingest.pool import PROCESSES_FROM_BYTES, PROCESSES_FROM_SESSIONS, Processes, _Shares, packed_reply
from postrun.ingest.prepare import Prepared
from postrun.records import MappedSession, PackedFile, SessionExtras, SourceFile, StepRow
from postrun.store.write import StepWrite


def test_by_default_one_process_fewer_than_the_cpus_for_a_catch_up_worth_it() -> None:
    cpus = len(os.sched_getaffinity(0))
    assert Processes.wanted(None) == Processes(max(1, cpus - 1), PROCESSES_FROM_SESSIONS)


@pytest.mark.parametrize("count", [0, 1, 4])
def test_a_number_the_user_set_holds_for_any_catch_up(count: int) -> None:
    assert Processes.wanted(count) == Processes(count, from_sessions=2, from_bytes=0)


def test_processes_are_worth_it_from_so_many_sessions_or_so_much_source() -> None:
    def unasked() -> list[int]:
        raise AssertionError("the sizes are not needed for that many sessions")

    wanted = Processes(1)
    assert wanted.worth_it(unasked, PROCESSES_FROM_SESSIONS)
    assert wanted.worth_it(lambda: [PROCESSES_FROM_BYTES - 1, 1], 2)  # a few large sessions
    assert not wanted.worth_it(lambda: [PROCESSES_FROM_BYTES - 2, 1], 2)
    assert not wanted.worth_it(lambda: [PROCESSES_FROM_BYTES * 4], 1)  # one session: nothing to share
    assert not Processes(0).worth_it(lambda: [PROCESSES_FROM_BYTES * 4] * 2, 2)


@pytest.mark.parametrize(
    "error",
    [
        PostrunError("where", "why"),
        PostrunError("", "why alone"),
        SourceError("/s/x.messages.json", "maps to invalid records: steps[3]: bad"),
        NotParseableYet("/s/x.messages.json", "messages", "line 1"),
        Excluded("1790000000000_x", "not recorded: workspace /w matches exclude '/w'"),
        StoreError("/db", "locked"),
    ],
)
def test_a_sessions_failure_crosses_processes_as_it_was_raised(error: PostrunError) -> None:
    crossed = pickle.loads(pickle.dumps(error))
    assert type(crossed) is type(error)
    assert (str(crossed), crossed.where, crossed.reason, crossed.args) == (
        str(error),
        error.where,
        error.reason,
        error.args,
    )
    assert crossed.exit_code == error.exit_code
    assert getattr(crossed, "kind", None) == getattr(error, "kind", None)


def test_a_bug_met_packing_a_session_is_that_sessions_failure_alone(tmp_path: Path) -> None:
    location = SessionLocation.in_root(tmp_path, "1790000000000_packing")
    broken = StepRow(record={"id": "s1"}, blob=b"{}", digest="d", id="s1")  # no seq: packing fails
    mapped = MappedSession(
        agent="cline", session={"id": location.session_id}, segments=[], actors=[], turns=[], steps=[broken]
    )
    result, mapped_ms = pickle.loads(packed_reply((location, Prepared(mapped, None), 12.5), None))
    assert mapped_ms == 12.5
    assert isinstance(result, PostrunError)
    assert str(result) == f"{location.messages}: internal error: KeyError: 'seq'"


def test_a_prepared_session_crosses_processes_as_it_was_packed(tmp_path: Path) -> None:
    location = SessionLocation.in_root(tmp_path, "1790000000000_crossing")
    record = {
        "id": "s1",
        "seq": 0,
        "turn_id": "t1",
        "type": "message",
        "outcome": "ok",
        "content_status": "inline",
        "at": "2026-05-19T12:00:00Z",
        "payload": {"text": "hello"},
        "flags": [{"kind": "k"}],
    }
    row = StepRow(record=record, blob=b"{}", digest="d", id="s1")
    mapped = MappedSession(
        agent="cline",
        session={"id": location.session_id},
        segments=[],
        actors=[],
        turns=[],
        steps=[row],
        extras=SessionExtras(model="m", git_branch="b"),
        source_files=(SourceFile(str(location.messages), 2, 3, 4),),
    )
    copy = PackedFile("x.json", 2, "h", b"z", (1, "d"), SourceFile("/x.json", 2, 3, 4), settings=True)
    packed = Prepared(mapped, None, (copy,)).packed(None)
    result, mapped_ms = pickle.loads(packed_reply((location, Prepared(mapped, None, (copy,)), 1.5), None))
    assert (result, mapped_ms) == (packed, 1.5)  # no pack: the vault keeps no copy
    assert [type(step) for step in result.steps] == [StepWrite]
    again = pickle.loads(pickle.dumps(Prepared(mapped, None, (copy,)).packed(lambda f: copy)))
    assert again.extra == (copy,) and again.mapped.extras == mapped.extras
    assert again.mapped.source_files == mapped.source_files


def test_a_process_is_given_no_more_than_its_fair_share_of_the_work_left() -> None:
    """At the end of a batched ingest the writer takes the last sessions itself rather than wait
    for its process to prepare a queue of them one after another."""
    sizes = [10] * 10
    shares = _Shares(1, sizes.__getitem__, len(sizes))
    while shares.may_give(0):
        shares.give(0)
    assert len(shares.queued[0]) == 5  # half of the 100 bytes: the writer's half is the rest
    assert shares.take() == 5 and shares.left == 40  # the writer prepares one
    assert shares.given_back(0) == 0 and not shares.may_give(0)  # 40 held, 40 left: it holds its share
    while shares.queued[0]:
        shares.given_back(0)
    assert shares.may_give(0)  # it holds none: given one, whatever its share
    lone = _Shares(1, [10**9].__getitem__, 1)
    assert lone.may_give(0)  # always one, however large
