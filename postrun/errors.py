"""Errors that reach the user as one line.

Every error a command can expect carries the path it is about (a file, a
variable, a session id) and a short reason; the CLI prints
``error: <path>: <reason>`` and exits with the error's code.
"""

from __future__ import annotations

from typing import Any

from postrun.exitcodes import ExitCode


class PostrunError(Exception):
    """An expected failure, shown as ``<where>: <reason>``."""

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}" if where else reason)
        self.where = where
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" if self.where else self.reason

    def __reduce__(self) -> tuple[Any, ...]:
        # A session's failure crosses from an ingest process to the writer as it was raised;
        # the default would call ``__init__`` again with the message alone.
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[PostrunError], args: tuple[Any, ...], state: dict[str, Any]) -> PostrunError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class UsageError(PostrunError):
    exit_code = ExitCode.USAGE


class ConfigError(PostrunError):
    """A bad configuration file, environment variable or flag."""

    exit_code = ExitCode.CONFIG


class StoreError(PostrunError):
    """The store cannot be opened or written."""


class StoreTooNewError(StoreError):
    """The store was written by a newer Postrun."""

    exit_code = ExitCode.CONFIG


class StoreTooOldError(StoreError):
    """A reader met a store an older Postrun wrote: only a writer upgrades it."""

    exit_code = ExitCode.CONFIG


class ScrubPending(StoreError):
    """``forget`` removed the sessions, but their bytes are still in the store's files."""

    exit_code = ExitCode.SCRUB_PENDING


class SourceError(PostrunError):
    """A source file (an agent's own file) cannot be used."""


class Unreadable(SourceError):
    """A source file its permissions keep Postrun from opening (``chmod 000``). Making it
    readable changes none of the fingerprints (size, mtime, inode), so capture looks at it
    again at each poll instead of waiting for the next write (a helper's file: whether it can be
    opened now, without reading the session again)."""


class NotParseableYet(SourceError):
    """A source file does not parse: most likely caught while the agent rewrites it.

    ``kind`` names the file's role (``messages`` or ``manifest``).
    """

    def __init__(self, where: str, kind: str, detail: str = "") -> None:
        reason = f"{kind} file not parseable yet (mid-write?)"
        super().__init__(where, f"{reason}: {detail}" if detail else reason)
        self.kind = kind


class NotFound(PostrunError):
    """A session or file that does not exist."""


class AlreadyRunning(PostrunError):
    exit_code = ExitCode.ALREADY_RUNNING


class NotRecorded(PostrunError):
    """A session Postrun does not record: forgotten (a tombstone), in an excluded workspace,
    or with no line of a session in it yet."""


class Forgotten(NotRecorded):
    pass


class NothingSaid(NotRecorded):
    """A file with no line of a session in it (yet): nothing to record. Looked at again when
    it changes, as what is written next may be the session's first line."""


class Excluded(NotRecorded):
    pass
