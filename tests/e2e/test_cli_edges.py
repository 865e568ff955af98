"""The real `postrun` executable at the edges of its command line: what it is pointed at, the
bytes it is given, its standard streams and a Ctrl-C, each one line and its exit code."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from tests.conftest import FIXTURES, run_postrun

SESSION = "1790000000000_basic"


def ingested(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    assert run_postrun("ingest", "--agent", "cline", str(root), env=env).returncode == 0


def test_export_into_a_fifo_writes_into_it_and_leaves_it_a_fifo(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    expected = run_postrun("export", SESSION, env=env).stdout.encode()
    assert len(expected) < 65536  # it fits in the pipe: read once the writer is done
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there, so the writer never waits
    try:
        result = run_postrun("export", SESSION, "-o", str(fifo), env=env)
        assert (result.returncode, result.stderr) == (0, "")
        assert stat.S_ISFIFO(fifo.lstat().st_mode)  # `-o /dev/stdout` likewise: never replaced by a file
        assert os.read(reader, 65536) == expected
    finally:
        os.close(reader)


def test_export_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    target = tmp_path / "shared" / "session.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    result = run_postrun("export", SESSION, "-o", str(link), env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert link.is_symlink() and link.readlink() == target
    assert target.read_text() == run_postrun("export", SESSION, env=env).stdout
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
