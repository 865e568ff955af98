"""What the C heap does with big freed blocks, kept for reuse or given back to the system:
glibc's ``mallopt`` and ``malloc_trim``, no-ops where the C library has neither (macOS, musl)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

# mallopt's parameters, as glibc's <malloc.h> numbers them.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Blocks this big or bigger are mapped on their own and unmapped when freed (a large session's
# file read whole, the parser's scratch for it); no more than this is kept free at the top of the
# heap. At 4 MB, each session's blocks of a few MB were mapped and faulted in anew: 2-4 % more
# wall time on a batched ingest of large sessions, and no lower a peak.
MAPPED_FROM_BYTES = 16 * 2**20
KEPT_FREE_BYTES = 4 * 2**20
# A capture takes blocks up to glibc's largest mapping threshold (32 MB on 64-bit) from its heap
# and keeps as much free there: a live session's file read whole again after each message is then
# read into pages the last read freed, not into pages mapped and faulted in anew.
REUSED_UP_TO_BYTES = 32 * 2**20


def _libc(name: str) -> Any | None:
    """The C library's function ``name`` as this process links it, None where it has none."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):
        return None


def give_back_big_blocks() -> None:
    """Have this process give big freed blocks back to the system (``MAPPED_FROM_BYTES``,
    ``KEPT_FREE_BYTES``).

    glibc raises the size it maps blocks from to the largest block freed so far (up to 32 MB) and
    keeps twice that free at the top of its heap: a batched ingest frees blocks of a few MB per
    large session, and each of its processes then held 4-7 MB it no longer used at its peak.
    For one-shot batched work only: a capture re-reads a live session's whole file every few
    seconds (``reuse_big_blocks``).
    """
    _set(MAPPED_FROM_BYTES, KEPT_FREE_BYTES)


def reuse_big_blocks() -> None:
    """Have this process reuse big freed blocks (``REUSED_UP_TO_BYTES``); give them back with
    ``trimmer`` once they are no longer wanted.

    glibc's own rule fails a live session's file: it is read whole after each message, a little
    larger each time, so each read is larger than the largest block freed so far, is mapped on its
    own, and has its pages faulted in anew (a 13 MB file: 2-4 ms a read instead of about 2).
    """
    _set(REUSED_UP_TO_BYTES, REUSED_UP_TO_BYTES)


def _set(mapped_from: int, kept_free: int) -> None:
    mallopt = _libc("mallopt")
    if mallopt is None:
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, mapped_from)
    mallopt(_M_TRIM_THRESHOLD, kept_free)


def trimmer() -> Callable[[], None]:
    """``malloc_trim(0)``: every free page of every arena given back to the system."""
    trim = _libc("malloc_trim")
    if trim is None:
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def run() -> None:
        trim(0)

    return run
