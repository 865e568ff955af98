"""One check's result, as every check returns it and ``postrun doctor`` prints it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    name: str
    level: Level
    detail: str
    hint: str = ""
    # A failure that every other command reports as a configuration error (exit 78): the
    # configuration itself, or a store written by a newer Postrun.
    configuration: bool = False
