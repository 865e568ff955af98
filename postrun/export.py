"""``postrun export``: a stored session as the v1.2 JSON envelope, JSON lines or Markdown."""

from __future__ import annotations

from typing import Literal

import orjson

from postrun import render
from postrun.errors import PostrunError
from postrun.schema import SchemaError, validate_envelope
from postrun.store.db import Database
from postrun.store.query import load_envelope, resolve_session_id, session_details

ExportFormat = Literal["json", "jsonl", "markdown"]
FORMATS: tuple[ExportFormat, ...] = ("json", "jsonl", "markdown")


def render_export(database: Database, reference: str, export_format: ExportFormat) -> bytes:
    """The session named by ``reference`` (an id or unique prefix) in ``export_format``."""
    session_id = resolve_session_id(database, reference)
    envelope = load_envelope(database, session_id)
    try:
        validate_envelope(envelope)
    except SchemaError as exc:
        # A store written by this Postrun always holds valid records; say so loudly if not.
        raise PostrunError(
            f"session {session_id}", f"stored records break the v1.2 schema: {exc.problems[0]}"
        ) from None
    if export_format == "json":
        return orjson.dumps(envelope, option=orjson.OPT_INDENT_2) + b"\n"
    if export_format == "jsonl":
        lines = [orjson.dumps({"record": "session", "data": envelope["session"]})]
        for kind, key in (("segment", "segments"), ("actor", "actors"), ("turn", "turns"), ("step", "steps")):
            lines += [orjson.dumps({"record": kind, "data": record}) for record in envelope[key]]
        return b"\n".join(lines) + b"\n"
    return render.markdown(envelope, session_details(database, session_id)).encode()
