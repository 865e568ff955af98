"""``capture --daemon`` refuses before forking when a capture holds the store (pure of any daemon)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from postrun.capture.daemon import refuse_when_running
from postrun.errors import AlreadyRunning


def test_a_holder_whose_status_is_empty_is_named_without_a_pid(tmp_path: Path) -> None:
    """A capture whose lock status could not be written (a full disk) holds an empty lock
    file: `status` says 'pid unknown', and the refusal names no pid 0."""
    lock = tmp_path / "postrun.db.capture.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(AlreadyRunning) as raised:
            refuse_when_running(lock)
        assert (raised.value.where, raised.value.reason) == (str(lock), "another capture is running")
    finally:
        os.close(fd)
