"""Is the stored copy of a session current? One equality rule for the start-up skip and the poller.

Two sets of file fingerprints are equal when they name the same files with the same size,
modification time (ns) and inode. The inode is part of the rule because a file replaced by
rename (write a temporary file, move it over the old one) within one tick of the file
system's clock can keep its size and mtime; its inode always changes. The rule errs
towards reading again: a copied or restored sessions folder (new inodes) is read once more
and stored as unchanged, while a stale "current" would hide a change until the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from postrun.records import SourceFile

FingerprintKey = int


def _identity(files: Iterable[SourceFile]) -> frozenset[tuple[str, int, int, int]]:
    return frozenset((f.path, f.size, f.mtime_ns, f.ino) for f in files)


def fingerprint_key(files: Sequence[SourceFile]) -> FingerprintKey:
    """A compact stand-in for a session's fingerprints: equal keys mean ``same_files`` (a 64-bit hash)."""
    return hash(_identity(files))


def same_files(stored: Sequence[SourceFile], current: Sequence[SourceFile]) -> bool:
    """True when ``current`` are the files ``stored`` were read from, unchanged since."""
    return bool(current) and _identity(stored) == _identity(current)
