"""End to end: the real `postrun capture` process over a temp sessions root."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from tests.conftest import FIXTURES, postrun_command, run_postrun
from tests.support.capture_process import (
    CaptureProcess,
    copy_data,
    expected_steps,
    read_store,
    replay,
    wait_until,
    write_in_place,
)

DEBOUNCE = 0.2
POLL = 0.3
BASIC = "1790000000000_basic"
PLANS = "1790000100000_plans"
REAL_A = "1795976499744_q4jun"  # cline-real/a_read_edit
REAL_B = "1795976512762_vrqks"  # cline-real/b_run_commands
REAL_E = "1795976639977_qou3n"  # cline-real/e_plan_then_act
REAL_H = "1795976749765_vx695"  # cline-real/h_subagents
CAUGHT_UP_WITH_BASIC = r"INFO cline: caught up with 1 session in "  # the start-up ingest of basic_act is done
INGEST_LINE = (
    r"^\S+ INFO cline (ingested|updated|unchanged) {id} \(\d+ steps?, \d+ turns?, \d+ written\) on {reason} in \d+ ms$"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A sessions root holding the basic_act session, in a Cline data dir of its own."""
    return copy_data("cline/basic_act", tmp_path / "data")


@pytest.fixture
def capture_env(env: dict[str, str], root: Path) -> dict[str, str]:
    env.update(
        POSTRUN_CLINE_DIR=str(root),
        POSTRUN_DEBOUNCE_SECONDS=str(DEBOUNCE),
        POSTRUN_POLL_SECONDS=str(POLL),
    )
    return env


@pytest.fixture
def events_only(capture_env: dict[str, str]) -> None:
    """A poll too slow to matter: whatever the test sees came through file-system events."""
    capture_env["POSTRUN_POLL_SECONDS"] = "60"


@pytest.fixture
def db(capture_env: dict[str, str]) -> Path:
    return Path(capture_env["POSTRUN_DB"])


@pytest.fixture
def start(capture_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., CaptureProcess]]:
    started: list[CaptureProcess] = []

    def launch(*args: str, env: dict[str, str] | None = None) -> CaptureProcess:
        process = CaptureProcess(env or capture_env, tmp_path, *args)
        started.append(process)
        return process

    yield launch
    for process in started:
        process.kill()


def add_session(root: Path, case: str, session_id: str) -> None:
    """Create a session folder the way Cline does: the folder, then its files, written in place."""
    source = FIXTURES / case / "data" / "sessions" / session_id
    folder = root / session_id
    folder.mkdir()
    for name in (f"{session_id}.messages.json", f"{session_id}.json"):
        write_in_place(folder / name, (source / name).read_bytes())


def edited(content: bytes, mark: str) -> bytes:
    """basic_act's messages with one assistant text changed (so one step changes)."""
    original = b"Fixing the off-by-one."
    assert original in content
    return content.replace(original, f"Fixing the off-by-one ({mark}).".encode(), 1)


def steps_of(db: Path, session_id: str) -> int | None:
    stored = read_store(db).get(session_id)
    return None if stored is None else stored.steps


@pytest.mark.usefixtures("events_only")
def test_startup_then_a_new_session_folder(start: Callable[..., CaptureProcess], root: Path, db: Path) -> None:
    capture = start()
    capture.wait_for_log(rf"cline: watching {root} \(1 session present, 1 new or changed\)$")
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    assert steps_of(db, BASIC) == expected_steps(FIXTURES / "cline/basic_act", BASIC)
    written = time.monotonic()
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    expected = expected_steps(FIXTURES / "cline/plan_act_resumed_open", PLANS)
    capture.wait_until(lambda: steps_of(db, PLANS) == expected, what="the new session in the store")
    latency = time.monotonic() - written
    capture.wait_for_log(INGEST_LINE.format(id=PLANS, reason="event"))
    print(f"new session folder visible in the store after {latency * 1000:.0f} ms (debounce {DEBOUNCE} s)")
    assert latency < DEBOUNCE + 2.0
    assert capture.lines(r" (ERROR|WARNING) ") == []


@pytest.mark.parametrize(
    ("case", "session_id", "how", "events"),
    [
        ("a_read_edit", REAL_A, "in_place", True),
        ("b_run_commands", REAL_B, "in_place", False),
        ("e_plan_then_act", REAL_E, "rename", True),
        ("h_subagents", REAL_H, "in_place", True),  # files caught empty at creation, subagent transcripts
    ],
)
def test_real_rewrites_replayed(
    start: Callable[..., CaptureProcess],
    capture_env: dict[str, str],
    tmp_path: Path,
    root: Path,
    db: Path,
    case: str,
    session_id: str,
    how: str,
    events: bool,
) -> None:
    """Cline's real sequence of rewrites ends up stored exactly as a one-shot ingest of the final files."""
    # Each path alone must be enough: events with a poll too slow to matter, or polls only.
    capture_env["POSTRUN_POLL_SECONDS" if events else "POSTRUN_USE_EVENTS"] = "60" if events else "0"
    capture = start()
    capture.wait_for_log(r"cline: watching ")
    writes = sum(1 for _ in replay(f"cline-real/{case}", root, how=how))
    # What a one-shot ingest of the final files gives: capture must end up with the very same records.
    one_shot = dict(capture_env, POSTRUN_DB=str(tmp_path / "one-shot.db"))
    assert run_postrun("ingest", str(root / session_id), env=one_shot).returncode == 0
    fresh = read_store(tmp_path / "one-shot.db")[session_id]
    assert fresh.steps == expected_steps(FIXTURES / "cline-real" / case, session_id)
    assert fresh.ended_at is not None

    def same_as_fresh() -> bool:
        stored = read_store(db).get(session_id)
        return stored is not None and (stored.digest, stored.step_digests) == (fresh.digest, fresh.step_digests)

    capture.wait_until(same_as_fresh, what=f"{session_id} stored as a one-shot ingest of the final files")
    ingests = capture.lines(INGEST_LINE.format(id=session_id, reason="(event|poll)"))
    assert 1 <= len(ingests) <= writes  # debounced: never more ingests than writes
    assert all((" on event " in line) == events for line in ingests)
    assert capture.lines(r" (ERROR|WARNING) ") == []
    assert capture.lines(r"\.tmp") == []


@pytest.mark.usefixtures("events_only")
def test_file_rewritten_in_place_is_updated(start: Callable[..., CaptureProcess], root: Path, db: Path) -> None:
    messages = root / BASIC / f"{BASIC}.messages.json"
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    before = read_store(db)[BASIC]
    write_in_place(messages, edited(messages.read_bytes(), "in place"))
    capture.wait_for_log(
        r"INFO cline updated 1790000000000_basic \(\d+ steps?, \d+ turns?, [1-9]\d* written\) on event"
    )
    after = read_store(db)[BASIC]
    assert after.step_digests != before.step_digests


@pytest.mark.usefixtures("events_only")
def test_file_replaced_by_rename_is_updated(start: Callable[..., CaptureProcess], root: Path, db: Path) -> None:
    messages = root / BASIC / f"{BASIC}.messages.json"
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    temp = messages.with_name(messages.name + ".1234.tmp")
    temp.write_bytes(edited(messages.read_bytes(), "renamed"))
    os.replace(temp, messages)
    capture.wait_for_log(r"INFO cline updated 1790000000000_basic .* on event")
    assert capture.lines(r"\.tmp") == []


@pytest.mark.usefixtures("events_only")
def test_torn_file_then_its_completion(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], root: Path, db: Path
) -> None:
    messages = root / BASIC / f"{BASIC}.messages.json"
    complete = messages.read_bytes()
    capture_env["POSTRUN_LOG_LEVEL"] = "DEBUG"  # shows the re-read that does not log the tear again
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    stored = read_store(db)[BASIC]
    torn_line = (
        r"INFO cline 1790000000000_basic: messages file not parseable yet \(mid-write\?\);"
        r" will retry on next change$"
    )
    write_in_place(messages, complete[: len(complete) // 2])
    capture.wait_for_log(torn_line)
    assert read_store(db)[BASIC] == stored  # stored data untouched
    # A configuration reload re-reads the session, but the same tear is not news.
    config = Path(capture_env["XDG_CONFIG_HOME"]) / "postrun" / "config.toml"  # the default location
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("full_sweep_minutes = 4\n")
    capture.send(signal.SIGHUP)
    capture.wait_for_log(r"cline: watching .* \(1 session present, 1 new or changed\)$", count=2)
    capture.wait_for_log(r"DEBUG cline 1790000000000_basic: messages file still not parseable \(already reported\)")
    assert len(capture.lines(torn_line)) == 1
    # The same torn file read again (the manifest next to it was touched) is not logged again.
    (root / BASIC / f"{BASIC}.json").touch()
    capture.wait_for_log(r"DEBUG cline 1790000000000_basic: messages file still not parseable \(already reported\)")
    assert len(capture.lines(torn_line)) == 1
    assert read_store(db)[BASIC].step_digests == stored.step_digests
    # A new change that is still torn is news; then the completed file is stored.
    write_in_place(messages, complete[: len(complete) // 3])
    capture.wait_for_log(torn_line, count=2)
    write_in_place(messages, edited(complete, "completed"))
    capture.wait_for_log(r"INFO cline updated 1790000000000_basic .* on event")
    assert read_store(db)[BASIC].step_digests != stored.step_digests
    assert len(capture.lines(torn_line)) == 2


def test_root_deleted_and_recreated(start: Callable[..., CaptureProcess], root: Path, db: Path) -> None:
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    shutil.rmtree(root)
    capture.wait_for_log(rf"WARNING cline: {root} is gone; stored sessions are kept")
    root.mkdir()
    capture.wait_for_log(rf"INFO cline: {root} appeared; watching it")
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    capture.wait_until(lambda: steps_of(db, PLANS), what="the new session in the store")
    assert BASIC in read_store(db)  # a session gone from disk stays in the store
    capture.wait_for_log(INGEST_LINE.format(id=PLANS, reason="(event|poll)"))


def test_root_missing_at_start_and_created_later(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], tmp_path: Path, db: Path
) -> None:
    late_root = tmp_path / "late" / "sessions"
    capture_env["POSTRUN_CLINE_DIR"] = str(late_root)
    capture = start()
    capture.wait_for_log(rf"WARNING cline: {late_root} does not exist yet; capture waits for it to appear")
    capture.wait_for_log(rf"cline: watching {late_root} \(0 sessions present, 0 new or changed\)")
    late_root.mkdir(parents=True)
    add_session(late_root, "cline/basic_act", BASIC)
    capture.wait_until(lambda: steps_of(db, BASIC), what="the session in the store")
    capture.wait_for_log(INGEST_LINE.format(id=BASIC, reason="(event|poll)"))


def test_poll_only_mode(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], root: Path, db: Path
) -> None:
    capture_env["POSTRUN_USE_EVENTS"] = "0"
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    messages = root / BASIC / f"{BASIC}.messages.json"
    before = read_store(db)[BASIC].step_digests
    written = time.monotonic()
    write_in_place(messages, edited(messages.read_bytes(), "polled"))
    capture.wait_until(lambda: read_store(db)[BASIC].step_digests != before, what="the change in the store")
    latency = time.monotonic() - written
    print(f"poll-only: change visible after {latency * 1000:.0f} ms (debounce {DEBOUNCE} s + poll {POLL} s)")
    assert latency < DEBOUNCE + POLL + 2.0
    capture.wait_for_log(INGEST_LINE.format(id=BASIC, reason="poll"))
    assert capture.lines(r" on event in ") == []
    # A new folder is found by the poll too.
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    capture.wait_until(lambda: steps_of(db, PLANS), what="the new session in the store")
    capture.wait_for_log(INGEST_LINE.format(id=PLANS, reason="poll"))


def test_sigterm_and_sigint_exit_zero_quickly(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], root: Path
) -> None:
    for number in (signal.SIGTERM, signal.SIGINT):
        capture = start()
        capture.wait_for_log(r"cline: watching ")
        code, seconds = capture.stop(number)
        assert code == 0, capture.log()
        assert seconds < 5
        capture.wait_for_log(r"INFO capture: stopped$")
    assert run_postrun("status", env=capture_env).returncode == 3  # the lock went with the process


def test_second_instance_refused_with_75(start: Callable[..., CaptureProcess], capture_env: dict[str, str]) -> None:
    first = start()
    first.wait_for_log(r"cline: watching ")
    second = run_postrun("capture", env=capture_env, timeout=30)
    assert second.returncode == 75
    assert second.stderr.strip() == f"error: {capture_env['POSTRUN_DB']}: another capture is running (pid {first.pid})"
    once = run_postrun("capture", "--once", env=capture_env, timeout=30)
    assert once.returncode == 75


def test_status_running_and_not_running(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], db: Path
) -> None:
    not_running = run_postrun("status", env=capture_env)
    assert not_running.returncode == 3
    assert not_running.stdout.splitlines()[0] == "capture: not running"
    assert f"store: {db} (not created yet)" in not_running.stdout
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    running = run_postrun("status", env=capture_env)
    assert running.returncode == 0, running.stderr
    lines = running.stdout.splitlines()
    assert lines[0].startswith(f"capture: running (pid {capture.pid}, since ")
    steps = expected_steps(FIXTURES / "cline/basic_act", BASIC)
    assert f"store: {db} (1 session, {steps} steps)" in lines
    assert any(line.startswith("last ingest: 20") for line in lines)
    assert "sessions watched: 1" in lines


def test_status_says_capture_runs_before_it_fails_on_an_unreadable_store(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], db: Path
) -> None:
    # "Is it running?" is answered whatever the store's state: the capture line comes first,
    # then the store's one-line error with its exit code (README: Exit codes).
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    with db.open("r+b") as store:
        store.write(b"not a SQLite header")  # in place: the running capture keeps its inode
    result = run_postrun("status", env=capture_env)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith(f"capture: running (pid {capture.pid}, since ")
    assert result.stderr.splitlines() == [f"error: {db}: cannot use the store (the file is not a SQLite database)"]


def test_once_prints_a_summary(capture_env: dict[str, str], tmp_path: Path) -> None:
    root = copy_data("cline/mid_write_and_junk", tmp_path / "junk")
    capture_env["POSTRUN_CLINE_DIR"] = str(root)
    first = run_postrun("capture", "--once", env=capture_env, timeout=60)
    assert first.returncode == 0, first.stderr  # a torn file is not a failure
    assert _summary(first.stdout) == "summary: 2 sessions, 1 ingested, 0 updated, 0 unchanged, 1 torn, 0 failed"
    assert "cline 1790000400001_halfw: messages file not parseable yet (mid-write?); will retry on next change" in (
        first.stderr
    )
    assert "skipped" in first.stderr  # junk next to the sessions is named once
    again = run_postrun("capture", "--once", env=capture_env, timeout=60)
    assert _summary(again.stdout) == "summary: 2 sessions, 0 ingested, 0 updated, 1 unchanged, 1 torn, 0 failed"
    bad = root / "1790000400009_baddd"
    bad.mkdir()
    (bad / f"{bad.name}.messages.json").write_text("42")
    failed = run_postrun("capture", "--once", env=capture_env, timeout=60)
    assert failed.returncode == 1
    assert _summary(failed.stdout) == "summary: 3 sessions, 0 ingested, 0 updated, 1 unchanged, 1 torn, 1 failed"
    assert f"ERROR cline {bad.name}: " in failed.stderr


def _summary(stdout: str) -> str:
    line = stdout.strip().splitlines()[-1]
    head, _, timing = line.rpartition(" in ")
    assert timing.endswith(" ms") and timing[:-3].isdigit(), line
    return head


AUDIT_HOOK = """
import os, sys
_root = os.environ.get("TEST_AUDIT_ROOT")
_out = os.environ.get("TEST_AUDIT_LOG")
if _root and _out:
    _fd = os.open(_out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    def _hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(args[0]))
            if path.startswith(_root + os.sep):
                os.write(_fd, (path + "\\n").encode())
    sys.addaudithook(_hook)
"""


def test_the_first_catch_up_logs_each_session_at_debug_only(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    for case, session_id in (("cline/plan_act_resumed_open", PLANS), ("cline-real/a_read_edit", REAL_A)):
        shutil.copytree(FIXTURES / case / "data" / "sessions" / session_id, root / session_id)
    quiet = start()
    quiet.wait_for_log(r"INFO cline: caught up with 3 sessions in ")
    assert [line.split(" ", 2)[2] for line in quiet.lines(r" INFO ")] == [
        f"cline: watching {root} (3 sessions present, 3 new or changed)",
        quiet.lines(r"caught up")[0].split(" ", 2)[2],
    ]
    assert quiet.stop()[0] == 0
    capture_env["POSTRUN_DB"] = str(tmp_path / "other" / "postrun.db")
    verbose = start("--log-level", "DEBUG")
    verbose.wait_for_log(r"INFO cline: caught up with 3 sessions in ")
    startup = r"DEBUG cline ingested {id} \(\d+ steps?, \d+ turns?, \d+ written\) on startup in \d+ ms$"
    for session_id in (BASIC, PLANS, REAL_A):
        verbose.wait_for_log(startup.format(id=session_id))


def test_restart_over_unchanged_history_reads_no_transcript(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    """Proof by an audit hook in the capture process: every file it opens under the root is logged."""
    for case, session_id in (("cline/plan_act_resumed_open", PLANS), ("cline-real/a_read_edit", REAL_A)):
        shutil.copytree(FIXTURES / case / "data" / "sessions" / session_id, root / session_id)
    hook_dir = tmp_path / "audit"
    hook_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(AUDIT_HOOK)
    opened = tmp_path / "opened.txt"
    capture_env.update(PYTHONPATH=str(hook_dir), TEST_AUDIT_ROOT=str(root.parent), TEST_AUDIT_LOG=str(opened))
    first = start()
    first.wait_for_log(r"cline: caught up with 3 sessions")
    assert first.stop()[0] == 0
    assert any(line.endswith(".messages.json") for line in opened.read_text().splitlines())  # the hook works
    opened.write_text("")
    second = start()
    second.wait_for_log(rf"cline: watching {root} \(3 sessions present, 0 new or changed\)$")
    assert second.stop()[0] == 0
    assert opened.read_text() == ""  # not one file under the Cline data dir was opened
    assert second.lines(r"INFO cline (ingested|updated|unchanged) ") == []  # skipped sessions log nothing at INFO


def test_daemon_pid_file_and_sigterm(capture_env: dict[str, str], db: Path) -> None:
    started = run_postrun("capture", "--daemon", env=capture_env, timeout=60)
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("postrun capture: running in the background (pid ")
    pid = int(started.stdout.split("(pid ")[1].split(")")[0])
    try:
        lock = Path(f"{db}.capture.lock")
        assert lock.stat().st_mode & 0o777 == 0o600
        assert json.loads(lock.read_text())["pid"] == pid  # the lock file is the pid file
        status = run_postrun("status", env=capture_env)
        assert status.returncode == 0 and f"pid {pid}" in status.stdout
        second = run_postrun("capture", "--daemon", env=capture_env, timeout=60)
        assert second.returncode == 75  # refused before it forks
        assert second.stderr.strip() == f"error: {capture_env['POSTRUN_DB']}: another capture is running (pid {pid})"
        log_file = Path(capture_env["XDG_STATE_HOME"]) / "postrun" / "log" / "capture.log"
        wait_until(lambda: "INFO cline: caught up with 1 session in " in log_file.read_text())
        assert "another capture is running" not in log_file.read_text()  # the running one's log stays clean
        assert log_file.stat().st_mode & 0o777 == 0o600  # umask 077
        log_file.unlink()  # a person clearing the log: the daemon writes a new one
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not _alive(pid), timeout=5, what="the daemon to exit")
        assert "INFO capture: stopped" in log_file.read_text()
        assert log_file.stat().st_mode & 0o777 == 0o600
        assert run_postrun("status", env=capture_env).returncode == 3
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (not reaped yet, its parent exited) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("variable", ["INVOCATION_ID", "NOTIFY_SOCKET"])
def test_daemon_refused_under_a_service_manager(capture_env: dict[str, str], variable: str) -> None:
    capture_env[variable] = "abc"
    refused = run_postrun("capture", "--daemon", env=capture_env)
    assert refused.returncode == 2
    assert f"a service manager runs this capture ({variable} is set)" in refused.stderr
    assert not Path(f"{capture_env['POSTRUN_DB']}.capture.lock").exists()


def test_notify_protocol(start: Callable[..., CaptureProcess], capture_env: dict[str, str], tmp_path: Path) -> None:
    """Type=notify end to end, with a datagram socket the test owns (no systemd needed)."""
    config = tmp_path / "notify.toml"
    config.write_text("full_sweep_minutes = 5\n")
    capture_env["POSTRUN_CONFIG"] = str(config)
    name = f"postrun-test-notify-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        server.settimeout(10)
        capture_env.update(NOTIFY_SOCKET="@" + name, WATCHDOG_USEC="300000")
        capture = start()
        messages: list[str] = []

        def receive_until(predicate: Callable[[list[str]], bool]) -> None:
            deadline = time.monotonic() + 10
            while not predicate(messages):
                assert time.monotonic() < deadline, messages
                messages.append(server.recv(4096).decode())

        receive_until(lambda got: any("READY=1" in m for m in got))
        ready = next(m for m in messages if "READY=1" in m)
        assert "STATUS=" in ready
        receive_until(lambda got: sum(m == "WATCHDOG=1" for m in got) >= 3)
        config.write_text("full_sweep_minutes = 4\n")
        capture.send(signal.SIGHUP)  # reload: RELOADING=1 with the time, then READY=1 again
        receive_until(lambda got: sum("READY=1" in m for m in got) >= 2)
        reloading = [i for i, m in enumerate(messages) if m.startswith("RELOADING=1\nMONOTONIC_USEC=")]
        assert len(reloading) == 1
        assert any("READY=1" in m for m in messages[reloading[0] :])
        capture.send(signal.SIGTERM)
        receive_until(lambda got: "STOPPING=1" in got)
        assert capture.process.wait(5) == 0


def test_journal_stream_drops_the_time(capture_env: dict[str, str], tmp_path: Path) -> None:
    journal_log = tmp_path / "journal.log"
    journal_log.touch()
    stat = journal_log.stat()
    # stderr is a file whose identity JOURNAL_STREAM names, as journald's stream would be.
    capture_env["JOURNAL_STREAM"] = f"{stat.st_dev}:{stat.st_ino}"
    with journal_log.open("a") as stderr:
        process = subprocess.Popen([*postrun_command(), "capture"], env=capture_env, stderr=stderr)
        try:
            wait_until(lambda: "cline: watching" in journal_log.read_text())
            process.send_signal(signal.SIGTERM)
            assert process.wait(5) == 0
        finally:
            if process.poll() is None:
                process.kill()
    first = journal_log.read_text().splitlines()[0]
    assert first.startswith("<6>INFO cline: watching ")


def _caught_up_with_config(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], config: Path
) -> CaptureProcess:
    """Capture started with ``config`` (log_level INFO) named by POSTRUN_CONFIG, once caught up."""
    config.write_text("log_level = 'INFO'\n")
    capture_env["POSTRUN_CONFIG"] = str(config)
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    return capture


def test_sighup_rereads_the_configuration(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], tmp_path: Path, root: Path, db: Path
) -> None:
    config = tmp_path / "config.toml"
    capture = _caught_up_with_config(start, capture_env, config)
    config.write_text("log_level = 'DEBUG'\n")
    capture.send(signal.SIGHUP)
    capture.wait_for_log(rf"INFO capture: configuration reloaded from {config}$")
    capture.wait_for_log(rf"cline: watching {root} \(1 session present, 0 new or changed\)$")
    capture.wait_for_log(r"DEBUG capture: debounce ")  # the new level is in force
    config.write_text("log_level = 'LOUD'\n")
    capture.send(signal.SIGHUP)
    capture.wait_for_log(r"ERROR capture: configuration not reloaded: .*log_level")
    config.write_text("log_level = 'DEBUG'\n")
    capture.send(signal.SIGHUP)
    capture.wait_for_log(rf"INFO capture: configuration re-read from {config}; nothing changed$")
    assert len(capture.lines(r"cline: watching ")) == 2  # neither a broken nor an unchanged file restarts it
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    capture.wait_until(lambda: steps_of(db, PLANS), what="the new session in the store")  # still capturing


def test_sighup_after_the_default_config_file_was_removed_goes_back_to_the_defaults(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str]
) -> None:
    # No --config, no POSTRUN_CONFIG: the file is the default one, and an absent default file
    # means the defaults, at a reload as at a start (README: SIGHUP re-reads the configuration).
    config = Path(capture_env["XDG_CONFIG_HOME"]) / "postrun" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("log_level = 'DEBUG'\n")
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    config.unlink()
    capture.send(signal.SIGHUP)
    capture.wait_for_log(rf"INFO capture: configuration reloaded from {config} \(absent: defaults\)$")
    assert not capture.lines(r"--config"), "no --config was given"


def test_sighup_after_a_named_config_file_was_removed_keeps_the_previous_one(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], tmp_path: Path
) -> None:
    # A file the user named must exist, at a reload as at a start; the error names what named it.
    config = tmp_path / "named.toml"
    capture = _caught_up_with_config(start, capture_env, config)
    config.unlink()
    capture.send(signal.SIGHUP)
    capture.wait_for_log(
        rf"ERROR capture: configuration not reloaded: {config}: config file not found \(from POSTRUN_CONFIG\);"
        " keeping the previous one$"
    )


def test_sighup_to_an_unlistable_sessions_root_keeps_the_running_capture(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], tmp_path: Path, root: Path, db: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"cline_dir = {str(root)!r}\n")
    capture_env["POSTRUN_CONFIG"] = str(config)
    del capture_env["POSTRUN_CLINE_DIR"]  # the file decides the root
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    not_a_folder = tmp_path / "not-a-folder"
    not_a_folder.write_text("a file, not a sessions root\n")
    config.write_text(f"cline_dir = {str(not_a_folder)!r}\n")
    capture.send(signal.SIGHUP)
    capture.wait_for_log(rf"ERROR capture: configuration not reloaded: {not_a_folder}: .*; keeping the previous one$")
    assert capture.process.poll() is None, capture.log()
    assert len(capture.lines(r"cline: watching ")) == 1  # nothing was stopped
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    capture.wait_until(lambda: steps_of(db, PLANS), what="the new session in the store")  # still capturing
    code, seconds = capture.stop()
    assert (code, seconds < 5) == (0, True), capture.log()


# `postrun` whose every ingest (live or of the start-up catch-up) announces itself in a file as
# it stores the session, then waits (a minute at most) for a second file to appear.
SLOW_INGEST = """
import pathlib, sys, time
import postrun.ingest.ingester
from postrun.cli import main
marker, release = pathlib.Path(sys.argv.pop(1)), pathlib.Path(sys.argv.pop(1))
real = postrun.ingest.ingester.Ingester.store
def slow(self, location, *args, **options):
    marker.write_text(location.session_id)
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return real(self, location, *args, **options)
postrun.ingest.ingester.Ingester.store = slow
sys.argv[0] = "postrun"
main()
"""


def slow_capture(env: dict[str, str], workdir: Path) -> tuple[CaptureProcess, Path, Path]:
    """A capture whose ingests wait for ``release``; ``marker`` appears when the first one starts."""
    marker, release = workdir / "ingesting", workdir / "release"
    program = (sys.executable, "-c", SLOW_INGEST, str(marker), str(release))
    return CaptureProcess(env, workdir, program=program), marker, release


def test_sigterm_during_a_reload_waiting_for_an_ingest_exits_within_5_s(
    capture_env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("log_level = 'INFO'\n")
    capture_env["POSTRUN_CONFIG"] = str(config)
    capture, marker, _ = slow_capture(capture_env, tmp_path)
    try:
        wait_until(marker.exists, what="the first ingest under way")
        config.write_text("log_level = 'DEBUG'\n")
        capture.send(signal.SIGHUP)
        capture.wait_for_log(r"INFO capture: configuration reloaded from ")
        code, seconds = capture.stop()
        assert code == 0, capture.log()
        assert seconds < 5, capture.log()
        capture.wait_for_log(r"WARNING capture: stopped without waiting for the ingest in progress")
    finally:
        capture.kill()


def test_a_reload_waiting_for_an_ingest_keeps_the_watchdog_fed(capture_env: dict[str, str], tmp_path: Path) -> None:
    # A reload waits for the ingest in progress however long it takes (README), and systemd's
    # watchdog (WatchdogSec=) kills a service that goes quiet meanwhile: the pings go on.
    config = tmp_path / "config.toml"
    config.write_text("log_level = 'INFO'\n")
    capture_env["POSTRUN_CONFIG"] = str(config)
    name = f"postrun-test-watchdog-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        server.settimeout(10)
        capture_env.update(NOTIFY_SOCKET="@" + name, WATCHDOG_USEC="300000")  # a ping every 0.1 s
        capture, marker, release = slow_capture(capture_env, tmp_path)
        try:
            wait_until(marker.exists, what="the first ingest under way")
            config.write_text("log_level = 'DEBUG'\n")
            capture.send(signal.SIGHUP)
            capture.wait_for_log(r"INFO capture: configuration reloaded from ")
            while not server.recv(4096).startswith(b"RELOADING=1"):
                pass
            pings = 0
            while pings < 5:  # ten would be due within the socket's timeout; none came before the fix
                message = server.recv(4096)
                assert b"READY=1" not in message, "the ingest is held: the reload cannot be over yet"
                pings += message == b"WATCHDOG=1"
            release.touch()
            capture.wait_for_log(r"INFO cline: caught up with 1 session in ")
            code, _ = capture.stop()
            assert code == 0, capture.log()
        finally:
            capture.kill()


def test_a_new_root_that_breaks_while_the_reload_waits_goes_back_to_the_previous_one(
    capture_env: dict[str, str], tmp_path: Path, root: Path, db: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"cline_dir = {str(root)!r}\n")
    capture_env["POSTRUN_CONFIG"] = str(config)
    del capture_env["POSTRUN_CLINE_DIR"]
    capture, marker, release = slow_capture(capture_env, tmp_path)
    try:
        wait_until(marker.exists, what="the first ingest under way")
        second = tmp_path / "second" / "sessions"
        second.mkdir(parents=True)
        config.write_text(f"cline_dir = {str(second)!r}\n")
        capture.send(signal.SIGHUP)
        capture.wait_for_log(r"INFO capture: configuration reloaded from ")  # listable when checked
        second.rmdir()
        second.write_text("not a folder any more\n")
        release.touch()  # the old capture can stop now; the new root fails to start
        capture.wait_for_log(rf"ERROR capture: configuration not applied: {second}: .*; back to the previous one$")
        capture.wait_for_log(rf"INFO cline: watching {root} ", count=2)
        add_session(root, "cline/plan_act_resumed_open", PLANS)
        capture.wait_until(lambda: steps_of(db, PLANS), what="the new session in the store")  # still capturing
        assert capture.stop()[0] == 0, capture.log()
    finally:
        capture.kill()


def test_store_removed_while_running_is_recreated(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], root: Path, db: Path
) -> None:
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    add_session(root, "cline/plan_act_resumed_open", PLANS)
    capture.wait_for_log(r"ERROR store .*: the database file was removed or replaced; recreating it and catching up")
    capture.wait_until(lambda: {BASIC, PLANS} <= read_store(db).keys(), what="both sessions in the new store")
    assert len(capture.lines(r"ERROR store ")) == 1


def test_store_folder_removed_while_idle(
    start: Callable[..., CaptureProcess], capture_env: dict[str, str], db: Path
) -> None:
    """Nothing changes in Cline's folder, yet the store and the lock come back (housekeeping)."""
    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    shutil.rmtree(db.parent)
    capture.wait_for_log(r"ERROR store .*: the database file was removed or replaced")
    capture.wait_until(lambda: BASIC in read_store(db), what="the session in the recreated store")
    capture.wait_for_log(r"WARNING capture: the capture lock .* was removed; took it again")
    status = run_postrun("status", env=capture_env)
    assert status.returncode == 0, status.stdout
    assert run_postrun("capture", env=capture_env).returncode == 75  # still one capture per store


def test_locked_store_is_retried(start: Callable[..., CaptureProcess], root: Path, db: Path) -> None:
    """Another writer holds the store longer than the busy timeout: one clear error, then a retry."""

    capture = start()
    capture.wait_for_log(CAUGHT_UP_WITH_BASIC)
    blocker = apsw.Connection(str(db))
    blocker.execute("BEGIN IMMEDIATE")
    try:
        add_session(root, "cline/plan_act_resumed_open", PLANS)
        capture.wait_for_log(r"ERROR store .*: the database is locked by another process; capture keeps running")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    capture.wait_until(lambda: steps_of(db, PLANS), what="the new session in the store")
    capture.wait_for_log(r"INFO store .*: writable again")


def test_progress_bar_on_a_terminal_during_the_first_catch_up(
    capture_env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    import pty

    for case, session_id in (("cline/plan_act_resumed_open", PLANS), ("cline-real/a_read_edit", REAL_A)):
        shutil.copytree(FIXTURES / case / "data" / "sessions" / session_id, root / session_id)
    controller, terminal = pty.openpty()
    process = subprocess.Popen([*postrun_command(), "capture"], env=capture_env, stderr=terminal)
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + 20
        while b"cline: caught up with 3 sessions" not in seen:
            assert time.monotonic() < deadline, seen
            seen += os.read(controller, 4096)
        process.send_signal(signal.SIGTERM)
        assert process.wait(5) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    text = seen.decode(errors="replace")
    assert "catching up [" in text and " sessions" in text
    assert "\x1b[K" in text  # the bar's line is cleared before log lines are written over it
    # The bar, full, stays on the last line until the summary takes its place.
    assert re.search(r"\] 3/3 sessions\r\x1b\[K[^\r\n]* INFO cline: caught up with 3 sessions in ", text), text
