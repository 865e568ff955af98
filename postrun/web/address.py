"""Where ``postrun serve`` listens unless told otherwise.

A module of its own so that the command line, which shows these as the options' defaults on
every start, need not import the state file's code (the paths, hashing) to know them.
"""

from __future__ import annotations

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
