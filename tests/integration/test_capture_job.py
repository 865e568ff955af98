"""One capture ingest (IngestJob) over real files and a real store: torn files, failures, faults."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import time
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import apsw
import pytest

from postrun.agents.cline import MappingCache, SessionLocation
from postrun.agents.cline import adapter as mapper
from postrun.agents.codex.adapter import CodexSource
from postrun.capture.book import SessionBook, Watched, plan_catch_up
from postrun.capture.caches import MappingCaches
from postrun.capture.job import IngestJob, JobResult
from postrun.capture.scheduler import Due, Reason, Scheduler
from postrun.errors import NotParseableYet, SourceError
from postrun.ingest import batches as catchup
from postrun.ingest.ingester import IngestOutcome
from postrun.ingest.pool import Processes
from postrun.records import SourceFile
from postrun.store.db import Database
from tests.conftest import FIXTURES
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support.capture_process import read_store
from tests.support.clock import FakeClock
from tests.support.logs import LogLines, captured
from tests.support.processes import mapping_processes

BASIC = "1790000000000_basic"


class Host:
    """The scheduler's side of a job: the real report-once rule, retries and catch-ups recorded."""

    def __init__(self) -> None:
        self.scheduler = Scheduler(FakeClock(), debounce_seconds=1)
        self.retries: list[tuple[str, Reason, float]] = []
        self.rereads: list[str] = []
        self.catch_ups: list[list[str]] = []

    def report_once(self, session_id: str, problem: Hashable) -> bool:
        return self.scheduler.report_once(session_id, problem)

    def retry_later(self, session_id: str, reason: Reason, delay: float) -> None:
        self.retries.append((session_id, reason, delay))

    def reread(self, session_id: str) -> None:
        self.rereads.append(session_id)

    def catch_up(self, session_ids: Iterable[str]) -> None:
        self.catch_ups.append(list(session_ids))

    def retry_catch_up(self, delay: float) -> None:
        self.retries.append(("", "startup", delay))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "cline/basic_act/data", tmp_path / "data")
    return tmp_path / "data" / "sessions"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "postrun.db"


@pytest.fixture
def log() -> Iterator[LogLines]:
    with captured("postrun.test.job") as lines:
        yield lines


@pytest.fixture
def job(root: Path, db_path: Path) -> Iterator[tuple[IngestJob, Host]]:
    database = Database.open(db_path)
    book = SessionBook()
    book.load(plan_catch_up(root, database, wall_now=time.time()))
    host = Host()
    job = IngestJob(
        host=host,
        root=root,
        db_path=db_path,
        database=database,
        max_bytes=2**26,
        book=book,
        caches=MappingCaches(FakeClock()),
        logger=logging.getLogger("postrun.test.job"),
    )
    yield job, host
    job.close()


def test_ingest_line_and_no_second_read_of_unchanged_files(job: tuple[IngestJob, Host], log: LogLines) -> None:
    ingest_job, _ = job
    reads: list[str] = []
    ingest = ingest_job.ingester.ingest

    def counted(
        location: SessionLocation, cache: MappingCache | None = None, **options: bool
    ) -> tuple[IngestOutcome, MappingCache]:
        reads.append(location.session_id)
        return ingest(location, cache, **options)

    ingest_job.ingester.ingest = counted
    assert ingest_job.run(Due(BASIC, "poll")).outcome == "ingested"
    assert log.lines == [
        "INFO cline ingested 1790000000000_basic (15 steps, 1 turn, 19 written) on poll in "
        + log.lines[0].rsplit(" in ", 1)[1]
    ]
    assert log.lines[0].endswith(" ms")
    result = ingest_job.run(Due(BASIC, "event"))  # a hint, but the files did not change
    assert (result.outcome, result.cost_seconds) == ("skipped", None)
    assert reads == [BASIC]
    assert len(log.lines) == 1


def test_a_start_up_ingest_logs_nothing_at_info(job: tuple[IngestJob, Host], log: LogLines) -> None:
    ingest_job, _ = job
    assert ingest_job.run(Due(BASIC, "startup")).outcome == "ingested"
    assert log.lines == []  # its line is at DEBUG: the catch-up reports itself with one summary


def test_the_start_up_catch_up_leaves_the_open_sessions_mapping_caches(
    job: tuple[IngestJob, Host], root: Path, db_path: Path, log: LogLines
) -> None:
    """A session open at start-up is likely the one being written: its next ingest parses only
    what was added, though a mapping process may have mapped it (its caches stay there)."""
    ingest_job, _ = job
    still_open = "1790000100000_plans"
    shutil.copytree(FIXTURES / "cline/plan_act_resumed_open/data/sessions" / still_open, root / still_open)
    results = list(ingest_job.startup.run([BASIC, still_open], lambda: False))
    assert [(session_id, result.outcome) for session_id, result in results] == [
        (BASIC, "ingested"),
        (still_open, "ingested"),
    ]
    assert log.lines == []  # start-up lines are at DEBUG
    stored = read_store(db_path)
    assert {session_id: ingest_job.caches.get(session_id) is not None for session_id in stored} == {
        session_id: session.ended_at is None for session_id, session in stored.items()
    }
    assert stored[still_open].ended_at is None and stored[BASIC].ended_at is not None


def test_a_start_up_catch_up_mapped_in_line_maps_each_session_once(
    job: tuple[IngestJob, Host], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open sessions' caches are those their one mapping left: not made by mapping them again."""
    ingest_job, _ = job
    still_open = "1790000100000_plans"
    shutil.copytree(FIXTURES / "cline/plan_act_resumed_open/data/sessions" / still_open, root / still_open)
    mapped: list[str] = []
    real = mapper.map_session

    def counted(files: Any, *args: Any) -> Any:
        mapped.append(files.location.session_id)
        return real(files, *args)

    monkeypatch.setattr(mapper, "map_session", counted)
    assert len(list(ingest_job.startup.run([BASIC, still_open], lambda: False))) == 2
    assert sorted(mapped) == [BASIC, still_open]
    assert ingest_job.caches.get(still_open) is not None


def test_a_catch_up_that_gives_way_after_its_last_batch_still_ends_its_mapping_processes(
    root: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Live work due just as the last batch commits: nothing is left to resume the catch-up for,
    so it ends there, and so do its mapping processes."""
    monkeypatch.setattr(catchup, "BATCH_SECONDS", 60.0)  # one batch
    monkeypatch.setattr(catchup, "TAIL_SHARE", 0.0)
    ids = []
    for index in range(6):
        session = Synthetic(synthetic_id(index), seed=index)
        session.grow()
        session.write(root)
        ids.append(session.session_id)
    job = IngestJob(
        host=Host(),
        root=root,
        db_path=db_path,
        database=Database.open(db_path),
        max_bytes=2**26,
        book=SessionBook(),
        caches=MappingCaches(FakeClock()),
        logger=logging.getLogger("postrun.test.job"),
        mapping_processes=Processes(2, from_sessions=4),
    )
    try:
        assert len(list(job.startup.run(ids, lambda: True))) == len(ids)
        assert mapping_processes() == []
    finally:
        job.close()


def test_torn_file_reported_once_per_change_and_store_untouched(
    job: tuple[IngestJob, Host], root: Path, db_path: Path, log: LogLines
) -> None:
    ingest_job, host = job
    ingest_job.run(Due(BASIC, "startup"))
    stored = read_store(db_path)[BASIC]
    messages = root / BASIC / f"{BASIC}.messages.json"
    complete = messages.read_bytes()
    torn = "INFO cline 1790000000000_basic: messages file not parseable yet (mid-write?); will retry on next change"
    messages.write_bytes(complete[:100])
    assert host.rereads == []
    assert ingest_job.run(Due(BASIC, "event")).outcome == "torn"
    assert host.rereads == [BASIC]  # read again once the write settles
    assert ingest_job.run(Due(BASIC, "poll")).outcome == "skipped"  # the same torn file is not read again
    assert host.rereads == [BASIC]
    (root / BASIC / f"{BASIC}.json").touch()  # a change next to it: read again, not reported again
    assert ingest_job.run(Due(BASIC, "event")).outcome == "torn"
    assert log.lines.count(torn) == 1
    messages.write_bytes(complete[:200])  # a new tear is news
    assert ingest_job.run(Due(BASIC, "event")).outcome == "torn"
    assert log.lines.count(torn) == 2
    assert read_store(db_path)[BASIC] == stored
    messages.write_bytes(complete)
    assert ingest_job.run(Due(BASIC, "event")).outcome == "unchanged"
    assert len(host.rereads) == 3  # one per torn read, none for the complete file


@pytest.mark.parametrize(
    ("seconds_ago", "reread"),
    [
        (5, True),  # a large write slowed by a busy disk: the file's time is the write's start
        (3600, False),  # its writer is gone (killed mid-write): reading it again soon finds the same tear
    ],
)
def test_a_torn_file_is_read_again_soon_only_while_it_is_being_written(
    job: tuple[IngestJob, Host], root: Path, seconds_ago: int, reread: bool
) -> None:
    ingest_job, host = job
    messages = root / BASIC / f"{BASIC}.messages.json"
    messages.write_bytes(messages.read_bytes()[:100])
    changed = time.time() - seconds_ago
    os.utime(messages, (changed, changed))
    assert ingest_job.run(Due(BASIC, "event")).outcome == "torn"
    assert host.rereads == ([BASIC] if reread else [])


def _codex_job(tmp_path: Path, host: Host, case: str = "a_commands") -> tuple[IngestJob, Path, str]:
    """A job over a copy of a real Codex case's rollouts, and its session's rollout path and id."""
    shutil.copytree(FIXTURES / "codex-real" / case / "sessions", tmp_path / "codex" / "sessions")
    source = CodexSource(tmp_path / "codex" / "sessions")
    (location,) = source.list().sessions
    database = Database.open(tmp_path / "postrun.db")
    book = SessionBook()
    book.load(plan_catch_up(source, database, wall_now=time.time()))
    job = IngestJob(
        host=host,
        sources=(Watched(source, book),),
        db_path=tmp_path / "postrun.db",
        database=database,
        max_bytes=2**26,
        caches=MappingCaches(FakeClock()),
        logger=logging.getLogger("postrun.test.job"),
    )
    return job, Path(location.where), location.session_id


def test_a_transcript_caught_mid_line_is_read_again_soon_while_it_is_written(tmp_path: Path) -> None:
    """Stored up to its last complete line; the rest of the line is read again once it settles,
    unless the file last changed long ago (nothing more is coming)."""
    host = Host()
    job, rollout, session_id = _codex_job(tmp_path, host)
    try:
        assert job.run(Due(session_id, "event")).outcome == "ingested"
        assert host.rereads == []
        with rollout.open("ab") as handle:
            handle.write(b'{"timestamp":"2026-12-01T19:21:00.000Z","type":"event_msg","pay')
        assert job.run(Due(session_id, "event")) == JobResult("unchanged", ANY, partial=True)
        assert host.rereads == [session_id]
        with rollout.open("ab") as handle:
            handle.write(b"load")
        an_hour_ago = time.time() - 3600
        os.utime(rollout, (an_hour_ago, an_hour_ago))
        assert job.run(Due(session_id, "event")) == JobResult("unchanged", ANY, partial=True)
        assert host.rereads == [session_id]
    finally:
        job.close()


def test_a_helper_left_mid_line_is_logged_once_while_its_parent_goes_on(tmp_path: Path, log: LogLines) -> None:
    """A sub-agent killed mid-line stays so: its parent's later reads store the parent's new lines
    and do not log the same half line again; it is news again once the session was stored whole."""
    host = Host()
    job, rollout, session_id = _codex_job(tmp_path, host, "d_subagent")
    (helper,) = [path for path in rollout.parent.iterdir() if path != rollout]
    whole_parent, whole_helper = rollout.read_bytes(), helper.read_bytes()
    *earlier, last = whole_parent.splitlines(keepends=True)
    rollout.write_bytes(b"".join(earlier))
    helper.write_bytes(whole_helper + b'{"timestamp":"2026-12-01T19:20:56.000Z","type":"event_msg","pay')
    an_hour_ago = time.time() - 3600
    os.utime(helper, (an_hour_ago, an_hour_ago))
    incomplete = (
        f"INFO codex {session_id}: {helper}: transcript line not complete yet (mid-write?); will retry on next change"
    )

    def read(outcome: str, *, partial: bool) -> None:
        result = job.run(Due(session_id, "event"))
        assert (result.outcome, result.partial, result.resolved) == (outcome, partial, not partial)
        host.scheduler.finished(Due(session_id, "event"), cost_seconds=result.cost_seconds, resolved=result.resolved)

    try:
        read("ingested", partial=True)
        assert log.lines.count(incomplete) == 1
        rollout.write_bytes(whole_parent[: -len(last)] + last)  # the parent's next line
        read("updated", partial=True)
        assert log.lines.count(incomplete) == 1
        helper.write_bytes(whole_helper)  # its line taken back: the session is stored whole
        read("unchanged", partial=False)
        helper.write_bytes(whole_helper + b'{"timestamp":"2026-12-01T19:20:57.000Z","type":"event_msg","pay')
        os.utime(helper, (an_hour_ago, an_hour_ago))
        read("unchanged", partial=True)
        assert log.lines.count(incomplete) == 2
        assert host.rereads == []  # an hour old: nothing is coming to finish it
    finally:
        job.close()


def test_a_helper_left_mid_line_at_start_up_is_not_logged_again_live(tmp_path: Path, log: LogLines) -> None:
    """The start-up pass and a live read name the same half line alike: it is logged once."""
    host = Host()
    job, rollout, session_id = _codex_job(tmp_path, host, "d_subagent")
    (helper,) = [path for path in rollout.parent.iterdir() if path != rollout]
    whole_parent = rollout.read_bytes()
    last = whole_parent.splitlines(keepends=True)[-1]
    rollout.write_bytes(whole_parent[: -len(last)])
    helper.write_bytes(helper.read_bytes() + b'{"timestamp":"2026-12-01T19:20:56.000Z","type":"event_msg","pay')
    an_hour_ago = time.time() - 3600
    os.utime(helper, (an_hour_ago, an_hour_ago))
    try:
        ((_, started),) = list(job.startup.run([session_id], lambda: False))
        assert (started.outcome, started.partial) == ("ingested", True)
        rollout.write_bytes(whole_parent)
        assert job.run(Due(session_id, "event")).outcome == "updated"
        assert [line for line in log.lines if "not complete yet" in line] == [
            f"INFO codex {session_id}: {helper}: transcript line not complete yet (mid-write?);"
            " will retry on next change"
        ]
    finally:
        job.close()


def test_each_unusable_helper_file_is_logged_once_per_change_of_it(tmp_path: Path, log: LogLines) -> None:
    """One helper file unusable for good, another torn at each of its changes: only the news is logged."""
    host = Host()
    job, _, session_id = _codex_job(tmp_path, host)
    try:
        assert job.run(Due(session_id, "event")).outcome == "ingested"
        outcome = job.ingester.reingest(session_id)
        source = job.watched(session_id).source
        own = source.adapter.fingerprint(source.location(session_id))
        broken, torn = str(tmp_path / "helper-1.jsonl"), str(tmp_path / "helper-2.jsonl")
        unread = (SourceError(broken, "not a Codex rollout"), NotParseableYet(torn, "transcript"))
        for size in (100, 200):  # the torn one changed between the two reads, the other did not
            files = (*own, SourceFile(broken, 10, 1, 1), SourceFile(torn, size, size, 2))
            assert not job.stored(dataclasses.replace(outcome, unread=unread), 0, files, "event", None).resolved
        assert [line for line in log.lines if "its stored steps kept" in line] == [
            f"ERROR codex {session_id}: {broken}: not a Codex rollout; its stored steps kept",
            f"INFO codex {session_id}: {torn}: transcript file not parseable yet (mid-write?);"
            " its stored steps kept, will retry on next change",
            f"INFO codex {session_id}: {torn}: transcript file not parseable yet (mid-write?);"
            " its stored steps kept, will retry on next change",
        ]
    finally:
        job.close()


def test_a_bad_session_is_reported_once_and_retried_on_change(
    job: tuple[IngestJob, Host], root: Path, log: LogLines
) -> None:
    ingest_job, _ = job
    messages = root / BASIC / f"{BASIC}.messages.json"
    good = messages.read_bytes()
    messages.write_text("42")
    assert ingest_job.run(Due(BASIC, "startup")).outcome == "failed"
    assert ingest_job.run(Due(BASIC, "poll")).outcome == "skipped"
    errors = [line for line in log.lines if line.startswith("ERROR ")]
    assert errors == [f"ERROR cline {BASIC}: {messages}: wrong shape: top level: expected an object or a list"]
    messages.write_bytes(good)
    assert ingest_job.run(Due(BASIC, "event")).outcome == "ingested"


def test_store_removed_is_recreated_and_caught_up(job: tuple[IngestJob, Host], db_path: Path, log: LogLines) -> None:
    ingest_job, host = job
    ingest_job.run(Due(BASIC, "startup"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    result = ingest_job.run(Due(BASIC, "startup"))  # the fingerprint guard is reset with the store
    assert result.outcome == "ingested"
    assert BASIC in read_store(db_path)
    assert host.catch_ups == [[BASIC]]
    assert [line for line in log.lines if line.startswith("ERROR")] == [
        f"ERROR store {db_path}: the database file was removed or replaced; recreating it and catching up"
    ]


def test_locked_store_is_retried_with_a_growing_delay(
    job: tuple[IngestJob, Host], db_path: Path, root: Path, log: LogLines
) -> None:
    ingest_job, host = job
    assert ingest_job.database is not None
    ingest_job.database.connection.set_busy_timeout(50)  # keep the test fast
    blocker = apsw.Connection(str(db_path))
    blocker.execute("BEGIN IMMEDIATE")
    try:
        assert ingest_job.run(Due(BASIC, "event")).outcome == "store"
        messages = root / BASIC / f"{BASIC}.messages.json"
        messages.write_bytes(messages.read_bytes() + b" ")
        assert ingest_job.run(Due(BASIC, "event")).outcome == "store"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert [delay for *_, delay in host.retries] == [2.0, 4.0]
    assert ingest_job.run(Due(BASIC, "event")).outcome == "ingested"
    assert [line for line in log.lines if not line.startswith("INFO cline ingested")] == [
        f"ERROR store {db_path}: the database is locked by another process; capture keeps running and retries"
        " (every 60 s at most)",
        f"INFO store {db_path}: writable again",
    ]


def test_one_job_ingests_the_sessions_of_several_roots_each_through_its_own_source(
    tmp_path: Path, db_path: Path, log: LogLines
) -> None:
    """Capture runs one source per (agent, root): two roots here, each with its own book."""
    from postrun.agents.cline.adapter import ClineSource
    from postrun.capture.book import Watched

    first, second = tmp_path / "one" / "sessions", tmp_path / "two" / "sessions"
    shutil.copytree(FIXTURES / "cline/basic_act/data/sessions", first)
    shutil.copytree(FIXTURES / "cline/plan_act_resumed_open/data/sessions", second)
    database = Database.open(db_path)
    watched = [Watched(ClineSource(root), SessionBook()) for root in (first, second)]
    for each in watched:
        each.book.load(plan_catch_up(each.source, database, wall_now=time.time()))
    job = IngestJob(
        host=Host(),
        sources=watched,
        db_path=db_path,
        database=database,
        max_bytes=2**26,
        caches=MappingCaches(FakeClock()),
        logger=logging.getLogger("postrun.test.job"),
    )
    try:
        plans = next(session_id for session_id in watched[1].book.ids())
        assert [each.source.root for each in watched if plans in each.book] == [second]
        assert job.run(Due(plans, "event")).outcome == "ingested"
        assert job.run(Due(BASIC, "event")).outcome == "ingested"
    finally:
        job.close()
    with Database.open(db_path) as reader:
        sources = dict(reader.execute("SELECT id, json_extract(record, '$.source') FROM sessions"))
    assert sources == {BASIC: str(first / BASIC), plans: str(second / plans)}
    assert [line.split(" ")[3] for line in log.lines] == [plans, BASIC]


def test_the_start_up_catch_up_leaves_the_caches_of_codex_threads_between_turns(tmp_path: Path) -> None:
    """A rollout whose last turn ended still takes its next prompt any time: its first line
    after start-up is read from its mark, not mapped from the whole rollout again."""
    ingest_job, _, codex_id = _codex_job(tmp_path, Host())
    try:
        ((session_id, result),) = list(ingest_job.startup.run([codex_id], lambda: False))
        assert result.outcome == "ingested" and read_store(tmp_path / "postrun.db")[session_id].ended_at is not None
        assert ingest_job.caches.get(session_id) is not None
    finally:
        ingest_job.close()
