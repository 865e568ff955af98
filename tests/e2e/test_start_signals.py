"""A signal to the real `postrun` while it starts, before the command installed its own handling:
it answers as it does later (README: capture and serve stop on Ctrl-C or SIGTERM with exit 0;
a Ctrl-C ends any other command with one `interrupted` line and 130).

The start is held at a known moment without sleeping: the configuration file is a FIFO, so the
process waits in reading it (after typer and the library are imported, before capture or the
review app installed their handlers) until this test opens it for writing; then the signal is
sent and the file given (empty)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, postrun_command
from tests.support.capture_process import CaptureProcess, RunningProcess, wait_until


def config_fifo(env: dict[str, str]) -> Path:
    fifo = Path(env["XDG_CONFIG_HOME"]) / "postrun" / "config.toml"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    return fifo


@contextmanager
def reading_config(fifo: Path, process: subprocess.Popen[str]) -> Iterator[None]:
    """Wait until ``process`` opened the configuration FIFO to read it (opening it for writing
    without blocking fails until then), and give it an empty file once the block is done."""

    def opened() -> int | None:
        assert process.poll() is None, f"postrun exited ({process.returncode}) before reading its configuration"
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            return None

    writer = wait_until(opened, timeout=60, what="postrun reading its configuration")
    try:
        yield
    finally:
        os.close(writer)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_while_capture_starts_stops_it_cleanly(
    tmp_path: Path, env: dict[str, str], number: signal.Signals
) -> None:
    # Before: SIGTERM took its default action (exit 143, nothing logged); Ctrl-C raised a
    # KeyboardInterrupt wherever the start was ("interrupted", 130; at worse moments a capture
    # that hung at exit, or ran on).
    root = tmp_path / "cline" / "sessions"
    root.mkdir(parents=True)
    fifo = config_fifo(env)
    capture = CaptureProcess(env, tmp_path, "--cline-dir", str(root))
    try:
        with reading_config(fifo, capture.process):
            capture.send(number)
        assert capture.process.wait(30) == 0, capture.log()
        assert capture.lines(r"INFO capture: stopped$"), capture.log()
        assert "\ninterrupted\n" not in capture.log()
    finally:
        capture.kill()


class ServeProcess(RunningProcess):
    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [*postrun_command(), "serve", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def test_sigterm_while_serve_starts_stops_it_cleanly_and_leaves_no_state_file(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # Before: exit 143 (SIGTERM's default action), as the review app's own handler was not there yet.
    fifo = config_fifo(env)
    serve = ServeProcess(env)
    try:
        with reading_config(fifo, serve.process):
            serve.process.send_signal(signal.SIGTERM)
        _, stderr = serve.process.communicate(timeout=30)
        assert (serve.process.returncode, stderr) == (0, "")
        assert not list(Path(env["XDG_STATE_HOME"]).rglob("*serve*"))  # no state file left behind
    finally:
        serve.kill()


def test_capture_once_stopped_while_it_starts_says_what_it_did(tmp_path: Path, env: dict[str, str]) -> None:
    # `capture --once` answers Ctrl-C with its summary and 130, as later in its run.
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    fifo = config_fifo(env)
    process = subprocess.Popen(
        [*postrun_command(), "capture", "--once", "--cline-dir", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with reading_config(fifo, process):
            process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stderr
        assert stdout.startswith("summary: 1 session, 0 ingested"), stdout
        assert "capture: interrupted; the sessions not read yet are read on the next run\n" in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
