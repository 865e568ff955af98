"""An ingest process: ``python -m postrun.ingest.pool_process FD`` (see ``postrun.ingest.pool``).

Its own module, so that the classes it sends back are pickled under their real module's name.
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection

from postrun.ingest.pool import serve


def main(argv: list[str]) -> int:
    try:
        serve(Connection(int(argv[1])))
    except BaseException:  # noqa: BLE001 - see below
        # The writer prepares in line whatever this process did not give back, and reports any
        # failure of a session there, in one line: a traceback here would only repeat it.
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
