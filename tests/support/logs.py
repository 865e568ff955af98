"""Capturing what a logger says, as ``<LEVEL> <message>`` lines."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


@contextmanager
def captured(logger_name: str) -> Iterator[LogLines]:
    """Every INFO-and-above line the named logger emits inside the block."""
    handler = LogLines()
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
