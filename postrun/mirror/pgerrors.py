"""What a PostgreSQL error means for the mirror: its reason in one line, and who said no.

A server that does not answer is an outage (retried); one that answered and refused the login
or a permission needs a person (the role, its password, a GRANT). libpq reports a refused
connection as text only (no SQLSTATE before the session starts), so its own fixed wording is
read; an error from a statement carries its SQLSTATE.
"""

from __future__ import annotations

import logging
from typing import Literal

import psycopg

from postrun.mirror.bounded import LOCK_TIMEOUT_SECONDS, STATEMENT_TIMEOUT_SECONDS

Refusal = Literal["unreachable", "login", "permission", "answered"]

# libpq's and the server's wording of a refused authentication (client and server side).
_LOGIN = (
    "authentication failed",
    "no password supplied",
    "no pg_hba.conf entry",
)
_PERMISSION = ("permission denied", "must be owner")


def describe_pg_error(exc: psycopg.Error) -> str:
    """libpq's reason, without its multi-line hints and connection preamble."""
    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = next((entry for entry in lines if not entry.startswith(("HINT", "DETAIL", "CONTEXT", "Is the"))), text)
    for prefix in ("connection failed: ", "FATAL:  ", "FATAL: ", "ERROR:  "):
        line = line.removeprefix(prefix)
    _, marker, rest = line.partition(" failed: ")
    if marker and line.startswith("connection to server"):
        line = rest
    line = line.removeprefix("FATAL:  ").strip() or type(exc).__name__
    return f"{_timed_out(exc)}{line}"


def _timed_out(exc: psycopg.Error) -> str:
    """What a bound of ``bounded`` that ran out means, before the server's own words."""
    if exc.sqlstate == "55P03" and "lock timeout" in str(exc):
        return f"a lock another PostgreSQL session holds was not released within {LOCK_TIMEOUT_SECONDS} s: "
    if exc.sqlstate == "57014" and "statement timeout" in str(exc):
        return f"no answer within {STATEMENT_TIMEOUT_SECONDS} s: "
    return ""


# SQLSTATE classes of an error about the rows sent, not the server or the connection: cardinality
# violation, data exception, integrity constraint violation, program limit exceeded (an index
# row too large).
_ROW_CLASSES = ("21", "22", "23", "54")


def refuses_rows(exc: psycopg.Error) -> bool:
    """Whether the server refused what was sent (another session's rows may go in)."""
    return (exc.sqlstate or "")[:2] in _ROW_CLASSES


def not_an_echo(record: logging.LogRecord) -> bool:
    """A ``psycopg`` logger filter: False for its warning on leaving a pipeline that the
    server's error aborted (``pipeline aborted``): that error is the one the mirror reports
    already, in its own line. The warning for a lost server (``[BAD]``) stays."""
    args = record.args if isinstance(record.args, tuple) else ()
    ignored = args[-1] if args else None
    return not (
        str(record.msg).startswith("error ignored terminating")
        and isinstance(ignored, psycopg.Error)
        and (isinstance(ignored, psycopg.errors.PipelineAborted) or bool(ignored.sqlstate))
    )


def refusal(exc: psycopg.Error) -> Refusal:
    """Who said no: nobody (``unreachable``), the server refusing the ``login`` or a
    ``permission``, or the server with another error (``answered``)."""
    state = exc.sqlstate or ""
    if state.startswith("28"):  # invalid authorization specification, invalid password
        return "login"
    if state == "42501":  # insufficient privilege
        return "permission"
    if state:
        return "answered"
    text = str(exc)
    if 'role "' in text and "does not exist" in text:
        return "login"
    if any(marker in text for marker in _LOGIN):
        return "login"
    if any(marker in text for marker in _PERMISSION):
        return "permission"
    return "answered" if "FATAL:" in text else "unreachable"
