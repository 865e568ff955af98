"""Ingest processes started ahead of a batched ingest: started only for targets that may be many
sessions, used by the ingest that wants them, and ended when it does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from postrun.agents.cline import list_sessions
from postrun.ingest import ahead
from postrun.ingest.batches import ingest_targets
from tests.reliability.kit import differences, read_records, write_synthetic
from tests.support.processes import mapping_processes

MAX_BYTES = 64 * 2**20


@pytest.fixture(autouse=True)
def no_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The processes' environment (theirs is this one's): no configuration file, no setting that
    reads files otherwise (an early session is prepared under the defaults)."""
    monkeypatch.setenv("POSTRUN_CONFIG", str(tmp_path / "no-config.toml"))
    for key in ("EXCLUDE", "MAX_FILE_MB", "KEEP_RAW"):
        monkeypatch.delenv(f"POSTRUN_{key}", raising=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "cline" / "sessions"
    write_synthetic(folder, 6, grows=3)
    return folder


def test_processes_start_ahead_only_for_targets_that_may_be_many_sessions(root: Path) -> None:
    one_file = next(root.glob("*/*.messages.json"))
    with ahead.started_ahead([str(one_file)], {}):
        assert mapping_processes() == []
    with ahead.started_ahead([str(root)], {}):
        assert len(mapping_processes()) == ahead.default_count()
    assert mapping_processes() == []  # those no ingest took end with the block
    with ahead.started_ahead(["an-id", "another-id"], {}):
        assert len(mapping_processes()) == ahead.default_count()
    assert mapping_processes() == []


def test_no_process_starts_ahead_when_the_environment_wants_none(root: Path) -> None:
    with ahead.started_ahead([str(root)], {ahead.PROCESSES_VARIABLE: "0"}) as started:
        assert mapping_processes() == []
        assert started.take(1) == []
    # Blank is unset; any other number is the pool's to honour once the settings are loaded.
    for value in (" ", "2"):
        with ahead.started_ahead([str(root)], {ahead.PROCESSES_VARIABLE: value}):
            assert len(mapping_processes()) == ahead.default_count()
    assert mapping_processes() == []


def test_a_batched_ingest_takes_the_processes_started_ahead(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started_later: list[Any] = []
    real_start = ahead.start

    def counted() -> ahead.Started | None:
        started = real_start()
        started_later.append(started)
        return started

    with ahead.started_ahead([str(root)], {}) as started:
        early = {process.pid for process in mapping_processes()}
        monkeypatch.setattr(ahead, "start", counted)
        report = ingest_targets(
            [str(root)], db=tmp_path / "ahead.db", default_root=root, max_bytes=MAX_BYTES, processes=1, started=started
        )
        assert started_later == []  # the one it wanted had started ahead
        left = {process.pid for process in mapping_processes()}
        assert len(left) == len(early) - 1 and left < early  # it ended the one it took
    assert mapping_processes() == []
    assert [outcome.session_id for outcome in report.outcomes] == [s.session_id for s in list_sessions(root).sessions]
    in_line_db = tmp_path / "in-line.db"
    in_line = ingest_targets([str(root)], db=in_line_db, default_root=root, max_bytes=MAX_BYTES, processes=0)
    assert differences(read_records(tmp_path / "ahead.db"), read_records(in_line_db)) == []
    assert len(in_line.outcomes) == len(report.outcomes)


def test_an_ingest_that_wants_no_processes_leaves_those_started_ahead_to_end(root: Path, tmp_path: Path) -> None:
    with ahead.started_ahead([str(root)], {}) as started:
        report = ingest_targets(
            [str(root)], db=tmp_path / "none.db", default_root=root, max_bytes=MAX_BYTES, processes=0, started=started
        )
        assert len(mapping_processes()) == ahead.default_count()  # untouched, still waiting for work
    assert mapping_processes() == []
    assert len(report.outcomes) == 6


@pytest.mark.parametrize("agent", ["cline", "no-such-agent"])
def test_processes_started_for_an_agent_are_told_it_and_serve_what_they_are_given(
    root: Path, tmp_path: Path, agent: str
) -> None:
    """Told the agent, a process imports its adapter while it waits for its first session; a kind
    it does not know is the writer's to report, and the process serves as any other. Started by
    the command (not as the interpreter started), it is told no targets: a command line the
    early start did not read may set other settings (``--config``) than the defaults."""
    with ahead.started_ahead([str(root)], {}, agent) as started:
        assert [process.cmdline()[5:] for process in mapping_processes()] == [[agent]] * ahead.default_count()
        report = ingest_targets(
            [str(root)], db=tmp_path / "told.db", default_root=root, max_bytes=MAX_BYTES, processes=1, started=started
        )
    assert mapping_processes() == []
    assert [outcome.session_id for outcome in report.outcomes] == [s.session_id for s in list_sessions(root).sessions]
    in_line_db = tmp_path / "in-line.db"
    ingest_targets([str(root)], db=in_line_db, default_root=root, max_bytes=MAX_BYTES, processes=0)
    assert differences(read_records(tmp_path / "told.db"), read_records(in_line_db)) == []


def test_processes_started_as_the_interpreter_starts_are_taken_by_the_ingest_they_were_guessed_for(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ahead.start_early(["ingest", "--agent", "cline", str(root)], {})
    early = {process.pid for process in mapping_processes()}
    assert len(early) == ahead.default_count()
    told = sorted((process.cmdline()[5:] for process in mapping_processes()), key=len, reverse=True)
    assert told == [["cline", str(root)]] + [["cline"]] * (ahead.default_count() - 1)  # the first its targets
    monkeypatch.setattr(ahead, "start", lambda *_: pytest.fail("the ingest started a process of its own"))
    with ahead.started_ahead([str(root)], {}, "cline") as started:
        taken = started.take(ahead.default_count())
        assert {one.process.pid for one in taken} == early
    ahead.end_early()  # as `postrun`'s main does: nothing left to end
    assert {process.pid for process in mapping_processes()} == early  # taken: the ingest's to end
    for one in taken:
        one.socket.close()  # as the pool's end: end-of-file to the process
    ahead.end([one.process for one in taken])
    assert mapping_processes() == []


def test_processes_guessed_for_another_command_end_and_the_ingest_starts_its_own(root: Path) -> None:
    ahead.start_early(["ingest", str(root)], {})
    early = {process.pid for process in mapping_processes()}
    with ahead.started_ahead([str(root)], {}, "codex") as started:  # typer read another agent than the guess
        # Its own processes, not a listing of the children: one being reaped is not listed.
        taken = started.take(ahead.default_count())
        assert len(taken) == ahead.default_count() and not {one.process.pid for one in taken} & early
        assert [one.process.poll() for one in taken] == [None] * len(taken)  # running, waiting for work
        for one in taken:
            one.socket.close()  # as the pool's end: end-of-file to the process
        ahead.end([one.process for one in taken])
    assert mapping_processes() == []
    ahead.start_early(["ingest", str(root)], {})
    ahead.end_early()  # the command ended before its ingest took them (a usage error, say)
    assert mapping_processes() == []
    unwanted: list[tuple[list[str], dict[str, str]]] = [
        (["capture", str(root)], {}),
        (["ingest", "--help"], {}),
        (["--config", "other.toml", "ingest", str(root)], {}),
        (["ingest", str(root)], {ahead.PROCESSES_VARIABLE: "0"}),
        (["ingest", "x" * 5000], {}),  # a name too long to look at: the command says so, not the head start
    ]
    for argv, environ in unwanted:
        ahead.start_early(argv, environ)
        assert mapping_processes() == []
    ahead.end_early()
