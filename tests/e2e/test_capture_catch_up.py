"""Capture's start-up pass over many sessions goes through the batched catch-up `postrun ingest`
uses: many sessions per transaction, mapping processes (``ingest_processes``; a number set holds
from 2 sessions on), live work between two batches, and the store it gives is ingest's."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import run_postrun
from tests.reliability.kit import Synthetic, differences, one_shot, read_records, store_problems, synthetic_id
from tests.support.capture_process import CaptureProcess
from tests.support.processes import mapping_processes

SESSIONS = 40
BAD = synthetic_id(SESSIONS)  # a messages file that is no transcript at all
TORN = synthetic_id(SESSIONS + 1)  # caught mid-write
STARTUP_LINE = r" DEBUG cline ingested \S+ .* on startup in "

# `postrun` whose catch-up takes a while whatever the machine: each session it stores there
# (not live) takes 40 ms more; everything else is the real capture.
SLOW_CATCH_UP = """
import sys, time
import postrun.ingest.ingester
from postrun.cli import main
real = postrun.ingest.ingester.Ingester.store
def slow(self, location, *args, live=False, **options):
    if not live:
        time.sleep(0.04)
    return real(self, location, *args, live=live, **options)
postrun.ingest.ingester.Ingester.store = slow
sys.argv[0] = "postrun"
main()
"""


def history(root: Path, count: int = SESSIONS, *, broken: bool = True) -> None:
    for index in range(count):
        session = Synthetic(synthetic_id(index), seed=index, with_helper=index % 5 == 0)
        for _ in range(4 + index % 7):
            session.grow()
        session.write(root)
    if broken:
        (root / BAD).mkdir()
        (root / BAD / f"{BAD}.messages.json").write_text("42")
        torn = Synthetic(TORN, seed=99)
        torn.grow()
        torn.write(root)
        messages = root / TORN / f"{TORN}.messages.json"
        messages.write_bytes(messages.read_bytes()[:150])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "cline" / "sessions"


@pytest.fixture
def catch_up_env(env: dict[str, str], root: Path) -> dict[str, str]:
    return env | {
        "POSTRUN_CLINE_DIR": str(root),
        "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        "POSTRUN_POLL_SECONDS": "0.3",
        "POSTRUN_INGEST_PROCESSES": "2",
        "POSTRUN_LOG_LEVEL": "DEBUG",
    }


@pytest.fixture
def started() -> Iterator[list[CaptureProcess]]:
    processes: list[CaptureProcess] = []
    yield processes
    for process in processes:
        process.kill()


def test_capture_once_over_many_sessions_stores_what_ingest_stores(
    catch_up_env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    history(root)
    once = run_postrun("capture", "--once", env=catch_up_env, timeout=120)
    assert once.returncode == 1, once.stderr  # the bad session
    assert once.stdout.startswith(
        f"summary: {SESSIONS + 2} sessions, {SESSIONS} ingested, 0 updated, 0 unchanged, 1 torn, 1 failed in "
    ), once.stdout
    assert "Traceback" not in once.stderr
    assert [line for line in once.stderr.splitlines() if " ERROR " in line] == [
        next(line for line in once.stderr.splitlines() if f"ERROR cline {BAD}: " in line)
    ]
    assert f"INFO cline {TORN}: messages file not parseable yet (mid-write?); will retry on next change" in once.stderr
    db = Path(catch_up_env["POSTRUN_DB"])
    reference = one_shot(root, tmp_path / "ingest" / "postrun.db", catch_up_env)
    assert len(reference) == SESSIONS
    assert differences(read_records(db), reference) == []
    assert store_problems(db) == []
    again = run_postrun("capture", "--once", env=catch_up_env, timeout=120)
    assert again.stdout.startswith(
        f"summary: {SESSIONS + 2} sessions, 0 ingested, 0 updated, {SESSIONS} unchanged, 1 torn, 1 failed in "
    ), again.stdout


def test_capture_start_up_over_many_sessions_reports_the_bad_one_and_stores_the_rest(
    catch_up_env: dict[str, str], root: Path, tmp_path: Path, started: list[CaptureProcess]
) -> None:
    history(root)
    capture = CaptureProcess(catch_up_env, tmp_path)
    started.append(capture)
    capture.wait_for_log(rf"INFO cline: caught up with {SESSIONS + 2} sessions in ")
    assert len(capture.lines(STARTUP_LINE)) == SESSIONS
    assert len(capture.lines(rf"ERROR cline {BAD}: ")) == 1
    assert capture.lines(r" ERROR ") == capture.lines(rf"ERROR cline {BAD}: ")
    assert len(capture.lines(rf"INFO cline {TORN}: messages file not parseable yet")) == 1
    # Its mapping processes end with the catch-up.
    capture.wait_until(lambda: not mapping_processes(capture.pid), what="the mapping processes to end")
    db = Path(catch_up_env["POSTRUN_DB"])
    assert differences(read_records(db), one_shot(root, tmp_path / "ingest" / "postrun.db", catch_up_env)) == []
    # The torn session, completed, is stored live.
    Synthetic(TORN, seed=99).write(root)
    capture.wait_for_log(rf"INFO cline ingested {TORN} .* on (event|poll) in ")
    assert capture.stop()[0] == 0
    assert capture.lines(r"Traceback|internal error") == []


def test_a_live_session_is_stored_between_two_batches_of_a_long_catch_up(
    catch_up_env: dict[str, str], root: Path, tmp_path: Path, started: list[CaptureProcess]
) -> None:
    """A session written while a long catch-up runs is stored before the catch-up ends; its
    mapping processes keep running across; SIGTERM ends it within the grace, keeping what
    was committed, and the next start converges."""
    history(root, 80, broken=False)
    capture = CaptureProcess(catch_up_env, tmp_path, program=(sys.executable, "-c", SLOW_CATCH_UP))
    started.append(capture)
    capture.wait_for_log(STARTUP_LINE)  # a first batch committed
    mappers = set(mapping_processes(capture.pid))
    assert len(mappers) == 2, capture.log()
    live = Synthetic(synthetic_id(500), seed=500)
    for _ in range(3):
        live.grow()
    live.write(root)
    capture.wait_for_log(rf"INFO cline ingested {live.session_id} .* on (event|poll) in ", timeout=60)
    assert capture.lines(r"caught up with") == [], capture.log()  # before the catch-up ended
    stored_before_live = len(capture.lines(STARTUP_LINE))
    capture.wait_for_log(STARTUP_LINE, count=stored_before_live + 1)  # and it goes on after
    assert set(mapping_processes(capture.pid)) == mappers  # the same ones, kept across
    code, seconds = capture.stop()  # SIGTERM
    assert (code, seconds < 5) == (0, True), capture.log()
    assert psutil.wait_procs(list(mappers), timeout=10)[1] == []
    db = Path(catch_up_env["POSTRUN_DB"])
    kept = read_records(db)
    assert live.session_id in kept and len(kept) >= stored_before_live + 1  # committed batches kept
    assert store_problems(db) == []
    finished = run_postrun("capture", "--once", env=catch_up_env, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert differences(read_records(db), one_shot(root, tmp_path / "ingest" / "postrun.db", catch_up_env)) == []
    assert capture.lines(r"Traceback|internal error") == []


def test_sigterm_stops_capture_once_between_two_batches_and_the_next_run_stores_the_rest(
    catch_up_env: dict[str, str], root: Path, tmp_path: Path, started: list[CaptureProcess]
) -> None:
    history(root, 80, broken=False)
    once = CaptureProcess(catch_up_env, tmp_path, "--once", program=(sys.executable, "-c", SLOW_CATCH_UP))
    started.append(once)
    once.wait_for_log(STARTUP_LINE)  # a first batch committed
    code, seconds = once.stop()  # SIGTERM
    assert (code, seconds < 5) == (0, True), once.log()
    once.wait_for_log(r"INFO capture: interrupted; the sessions not read yet are read on the next run")
    assert once.process.stdout is not None
    stored = int(once.process.stdout.read().split(" sessions, ")[1].split(" ingested")[0])
    db = Path(catch_up_env["POSTRUN_DB"])
    assert 0 < stored == len(read_records(db)) < 80  # what was committed, kept
    assert store_problems(db) == []
    rest = run_postrun("capture", "--once", env=catch_up_env, timeout=120)
    assert rest.stdout.startswith(f"summary: 80 sessions, {80 - stored} ingested, 0 updated, {stored} unchanged, ")
    assert differences(read_records(db), one_shot(root, tmp_path / "ingest" / "postrun.db", catch_up_env)) == []


def test_ctrl_c_stops_capture_once_with_130_and_a_summary_that_says_so(
    catch_up_env: dict[str, str], root: Path, tmp_path: Path, started: list[CaptureProcess]
) -> None:
    history(root, 80, broken=False)
    once = CaptureProcess(catch_up_env, tmp_path, "--once", program=(sys.executable, "-c", SLOW_CATCH_UP))
    started.append(once)
    once.wait_for_log(STARTUP_LINE)  # a first batch committed
    code, _ = once.stop(signal.SIGINT)  # Ctrl-C
    assert code == 130, once.log()
    assert once.process.stdout is not None
    summary = once.process.stdout.read()
    stored = int(summary.split(" sessions, ")[1].split(" ingested")[0])
    assert 0 < stored < 80
    assert summary.rstrip().endswith(f"; interrupted: {80 - stored} not read yet (read on the next run)"), summary
    assert stored == len(read_records(Path(catch_up_env["POSTRUN_DB"])))  # what was committed, kept
