"""sd_notify over a real datagram socket; the log line formats and the terminal progress bar."""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from postrun.capture.log import LineFormatter, ProgressBar, TerminalHandler, configure_logging, stream_is_journal
from postrun.capture.notify import Notifier


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(str(path))
        server.settimeout(5)
        yield server, str(path)


def test_notify_sends_datagrams_to_a_path_socket(notify_socket: tuple[socket.socket, str]) -> None:
    server, path = notify_socket
    notifier = Notifier({"NOTIFY_SOCKET": path}, pid=os.getpid())
    assert notifier.enabled
    assert notifier.ready("watching 3 sessions")
    assert server.recv(4096) == b"READY=1\nSTATUS=watching 3 sessions"
    assert notifier.watchdog()
    assert server.recv(4096) == b"WATCHDOG=1"
    assert notifier.reloading()
    assert re.fullmatch(rb"RELOADING=1\nMONOTONIC_USEC=\d+", server.recv(4096))
    assert notifier.stopping()
    assert server.recv(4096) == b"STOPPING=1"


def test_notify_abstract_namespace() -> None:
    name = f"postrun-unit-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind("\0" + name)
        server.settimeout(5)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}, pid=1).status("catching up")
        assert server.recv(4096) == b"STATUS=catching up"


def test_notify_without_a_socket_is_a_no_op() -> None:
    notifier = Notifier({}, pid=1)
    assert not notifier.enabled
    assert not notifier.ready("x")
    assert notifier.watchdog_interval is None


def test_notify_survives_a_vanished_manager(tmp_path: Path) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")}, pid=1)
    assert not notifier.watchdog()  # refused by the socket that is gone, and no exception


@pytest.mark.parametrize(
    ("environ", "interval"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 10.0),  # a third of 30 s: under half, as systemd asks
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}, 10.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval(environ: dict[str, str], interval: float | None) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": "/run/x", **environ}, pid=42)
    assert notifier.watchdog_interval == interval


def _record(message: str, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord("postrun", level, __file__, 1, message, None, None)


def test_line_format_with_iso_time() -> None:
    line = LineFormatter(journal=False).format(_record("cline: watching /x (1 session present, 0 new or changed)"))
    time_text, level, message = line.split(" ", 2)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d", time_text)
    assert (level, message) == ("INFO", "cline: watching /x (1 session present, 0 new or changed)")


def test_journal_format_has_no_time_and_a_priority() -> None:
    formatter = LineFormatter(journal=True)
    assert formatter.format(_record("hello")) == "<6>INFO hello"
    assert formatter.format(_record("bad", logging.ERROR)) == "<3>ERROR bad"
    assert formatter.format(_record("careful", logging.WARNING)) == "<4>WARNING careful"


def test_a_library_s_message_is_one_line_saying_whose() -> None:
    """psycopg's warning when a server dies mid-batch runs on over three lines."""
    message = (
        "error ignored terminating <psycopg.Pipeline [BAD]>: consuming input failed: server closed the"
        " connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while"
    )
    record = logging.LogRecord("psycopg.pq", logging.WARNING, __file__, 1, message, None, None)
    line = LineFormatter(journal=True).format(record)
    assert "\n" not in line and line.startswith("<4>WARNING psycopg: error ignored terminating")
    assert "unexpectedly This probably means" in line


def test_journal_stream_must_name_the_stream_itself(tmp_path: Path) -> None:
    with (tmp_path / "stderr").open("w") as stream, (tmp_path / "other").open("w") as other:
        info = os.fstat(stream.fileno())
        environ = {"JOURNAL_STREAM": f"{info.st_dev}:{info.st_ino}"}
        assert stream_is_journal(stream, environ)
        assert not stream_is_journal(other, environ)  # set, but for another stream (a child's redirect)
        assert not stream_is_journal(stream, {})
        assert not stream_is_journal(stream, {"JOURNAL_STREAM": "garbage"})


def test_log_file_is_private_and_replaces_handlers(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "capture.log"
    setup = configure_logging("INFO", environ={}, log_file=log_file)
    try:
        setup.logger.info("first line")
        setup.logger.debug("not shown at INFO")
        setup.set_level("DEBUG")
        setup.logger.debug("shown at DEBUG")
    finally:
        setup.close()
    lines = log_file.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["INFO first line", "DEBUG shown at DEBUG"]
    assert (log_file.parent.stat().st_mode & 0o777) == 0o700
    logger = logging.getLogger("postrun")
    assert (logger.handlers, logger.propagate) == ([], True)  # as it was before


def test_progress_bar_keeps_log_lines_above_it() -> None:
    stream = io.StringIO()
    progress = ProgressBar(stream)
    handler = TerminalHandler(stream, progress)
    handler.setFormatter(logging.Formatter("%(message)s"))
    progress.start(4)
    progress.advance()
    handler.emit(_record("cline ingested a (1 steps, 1 turns, 3 written) on startup in 1 ms"))
    for _ in range(4):
        progress.advance()  # one more than the total: no harm
    assert progress.active  # the full bar stays at the bottom until the summary replaces it
    full = f"catching up [{'#' * 30}] 4/4 sessions"
    assert _render(stream.getvalue()) == ["cline ingested a (1 steps, 1 turns, 3 written) on startup in 1 ms", full]
    progress.finish(lambda: handler.emit(_record("cline: caught up with 4 sessions in 0.1 s")))
    assert not progress.active
    screen = _render(stream.getvalue())
    assert screen == [
        "cline ingested a (1 steps, 1 turns, 3 written) on startup in 1 ms",
        "cline: caught up with 4 sessions in 0.1 s",
        "",
    ]
    assert "] 0/4 sessions" in stream.getvalue()


def _render(output: str) -> list[str]:
    """What a terminal shows after carriage returns and erase-line sequences."""
    lines = [""]
    for part in re.split(r"(\r\x1b\[K|\r|\n)", output):
        if part in ("\r\x1b[K", "\r"):
            lines[-1] = ""
        elif part == "\n":
            lines.append("")
        else:
            lines[-1] += part
    return lines


def test_a_log_file_deleted_or_moved_away_is_written_anew(tmp_path: Path) -> None:
    # Before: the daemon wrote on into the unlinked file, and every later line was lost until
    # the next rotation, 10 MB on.
    log_file = tmp_path / "log" / "capture.log"
    setup = configure_logging("INFO", environ={}, log_file=log_file)
    try:
        setup.logger.info("first")
        log_file.unlink()
        setup.logger.info("after the delete")
        moved = log_file.rename(tmp_path / "old.log")
        setup.logger.info("after the move")
        shutil.rmtree(log_file.parent)
        setup.logger.info("after its folder went too")
    finally:
        setup.close()
    assert [line.split(" ", 1)[1] for line in moved.read_text().splitlines()] == ["INFO after the delete"]
    assert [line.split(" ", 1)[1] for line in log_file.read_text().splitlines()] == ["INFO after its folder went too"]
    assert (log_file.parent.stat().st_mode & 0o777) == 0o700
