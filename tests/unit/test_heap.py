"""postrun.heap: big freed blocks go back to the system once a process asks for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from postrun.heap import KEPT_FREE_BYTES, MAPPED_FROM_BYTES, _libc

pytestmark = pytest.mark.skipif(_libc("mallopt") is None, reason="glibc's mallopt is not here")

# A fresh interpreter allocates and frees a block above the mapping threshold three times over,
# and prints how much more resident memory it holds than before.
_ALLOCATE_AND_FREE = """
import os, sys
def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
if sys.argv[1] == "asked":
    from postrun.heap import give_back_big_blocks
    give_back_big_blocks()
before = resident()
for _ in range(3):
    block = b"x" * int(sys.argv[2])
    del block
print(resident() - before)
"""


def _held_after_freeing(mode: str) -> int:
    environ = {"PATH": "/usr/bin:/bin"}  # no MALLOC_* variable of the caller's
    done = subprocess.run(
        [sys.executable, "-P", "-c", _ALLOCATE_AND_FREE, mode, str(MAPPED_FROM_BYTES * 3 // 2)],
        capture_output=True,
        text=True,
        check=True,
        env=environ,
    )
    return int(done.stdout)


def test_a_process_that_asked_holds_no_big_block_it_freed() -> None:
    assert _held_after_freeing("asked") < KEPT_FREE_BYTES


def test_without_asking_glibc_keeps_a_big_block_it_freed() -> None:
    # What the setting is for: once the first is freed, glibc takes the next from its heap, and
    # keeps it resident when it is freed.
    assert _held_after_freeing("plain") >= MAPPED_FROM_BYTES
