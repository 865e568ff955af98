"""What every part of the schema shares: its version, its error, and the timestamp rule.

Kept apart from the models (``postrun.schema.models``, pydantic) so that what only maps and
checks records plainly (an ingest process, most of the time) never builds them: building
the models is most of an ingest process's start-up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

SCHEMA_VERSION = "1.2"

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
TIMESTAMP_MESSAGE = "expected ISO 8601 date-time with timezone"


class SchemaError(ValueError):
    """One or more records break the schema; ``problems`` are ``path: message`` lines."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def check_timestamp(value: str) -> str:
    if not _TIMESTAMP.fullmatch(value):
        raise ValueError(TIMESTAMP_MESSAGE)
    try:
        # A time whose UTC form falls outside years 1 to 9999 cannot be stored (times are kept in UTC).
        datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(TIMESTAMP_MESSAGE) from None
    return value
