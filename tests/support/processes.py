"""Finding the ingest processes a batched ingest started (``postrun.ingest.pool``)."""

from __future__ import annotations

import psutil


def mapping_processes(parent: psutil.Process | int | None = None) -> list[psutil.Process]:
    """The mapping processes among ``parent``'s children (a process, a pid; None: this process)."""
    if not isinstance(parent, psutil.Process):
        parent = psutil.Process(parent)
    found = []
    for child in parent.children():
        try:
            if "postrun.ingest.pool_process" in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:  # ended while it was listed
            continue
    return found
