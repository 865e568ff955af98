"""postrun.heap: big freed blocks go back to the system once a process asks for it, or are
reused (a capture) until it trims its heap."""

from __future__ import annotations

import subprocess
import sys

import pytest

from postrun.heap import KEPT_FREE_BYTES, MAPPED_FROM_BYTES, REUSED_UP_TO_BYTES, _libc

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


# As a capture reads a live session's file after each message: a little larger each time, the
# last read kept until the new one is made; prints the pages faulted in by the five reads.
_READ_AGAIN_AND_AGAIN = """
import resource, sys
if sys.argv[1] == "asked":
    from postrun.heap import reuse_big_blocks
    reuse_big_blocks()
size = int(sys.argv[2])
kept = b"x" * size
faults = 0
for grown in range(1, 6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = b"x" * (size + grown * 65536)
    faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    kept, block = block, None
print(faults)
"""

# Two big blocks made and freed after asking to reuse them, then the heap trimmed: prints the
# resident memory held after freeing, and after trimming.
_REUSE_THEN_TRIM = """
import os, sys
def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
from postrun.heap import reuse_big_blocks, trimmer
reuse_big_blocks()
before = resident()
kept = b"x" * int(sys.argv[1])
block = b"x" * (int(sys.argv[1]) + 2**20)
del kept, block
held = resident() - before
trimmer()()
print(held, resident() - before)
"""


def _fresh(script: str, *arguments: object) -> list[int]:
    environ = {"PATH": "/usr/bin:/bin"}  # no MALLOC_* variable of the caller's
    done = subprocess.run(
        [sys.executable, "-P", "-c", script, *map(str, arguments)],
        capture_output=True,
        text=True,
        check=True,
        env=environ,
    )
    return [int(figure) for figure in done.stdout.split()]


def _held_after_freeing(mode: str) -> int:
    return _fresh(_ALLOCATE_AND_FREE, mode, MAPPED_FROM_BYTES * 3 // 2)[0]


def test_a_process_that_asked_holds_no_big_block_it_freed() -> None:
    assert _held_after_freeing("asked") < KEPT_FREE_BYTES


def test_without_asking_glibc_keeps_a_big_block_it_freed() -> None:
    # What the setting is for: once the first is freed, glibc takes the next from its heap, and
    # keeps it resident when it is freed.
    assert _held_after_freeing("plain") >= MAPPED_FROM_BYTES


def test_a_capture_reads_a_growing_file_into_pages_the_last_read_freed() -> None:
    size = REUSED_UP_TO_BYTES // 3  # a 10 MB file
    pages = size // 4096
    [asked] = _fresh(_READ_AGAIN_AND_AGAIN, "asked", size)
    [plain] = _fresh(_READ_AGAIN_AND_AGAIN, "plain", size)
    # glibc's own rule maps each larger block anew: all its pages faulted in at every read.
    assert plain >= 5 * pages
    assert asked < plain / 2


def test_what_a_capture_kept_for_reuse_goes_back_when_it_trims() -> None:
    size = REUSED_UP_TO_BYTES // 3
    held, trimmed = _fresh(_REUSE_THEN_TRIM, size)
    assert held >= size  # kept for the next read
    assert trimmed < KEPT_FREE_BYTES
