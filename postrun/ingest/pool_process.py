"""An ingest process: ``python -m postrun.ingest.pool_process FD [AGENT [TARGET...]]`` (see ``postrun.ingest.pool``).

Its own module, so that the classes it sends back are pickled under their real module's name.
"""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Connection

from postrun.heap import give_back_big_blocks
from postrun.ingest.pool import serve


def main(argv: list[str]) -> int:
    give_back_big_blocks()  # it prepares one session after another, then ends
    try:
        serve(Connection(int(argv[1])), argv[2] if len(argv) > 2 else "", argv[3:])
    except BaseException:  # noqa: BLE001 - see below
        # The writer prepares in line whatever this process did not give back, and reports any
        # failure of a session there, in one line: a traceback here would only repeat it.
        return 1
    return 0


if __name__ == "__main__":
    # Without the interpreter's teardown (freeing every module and what the mapping cached), which
    # the writer waits for at the end of each batched ingest: this process writes only to its
    # socket, which ``serve`` has closed, and holds nothing else that needs flushing or closing.
    os._exit(main(sys.argv))
