"""BENCHMARKS.md's measured sections: one writer for every bench.

Each bench (``python -m bench``, ``bench.claude``, ``bench.review``, ``bench.vault``,
``bench.web``, ``bench.mirror``) writes its figures into its own section of the file,
between two markers, stamped with the command, the machine and the commit it ran at; the
rest of the file (method, what limits each figure) is written by people and left alone.
``python -m bench`` runs every other bench after its own phases, so one run writes every
section with the same commit.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from bench.machine import Machine, describe

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "BENCHMARKS.md"
HEADER = "# Benchmarks\n"


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of bench ``name``'s section (``bench.web``: ``"web"``)."""
    return (
        f"<!-- bench.{name}: begin (written by `python -m bench.{name}`; edit outside these markers) -->",
        f"<!-- bench.{name}: end -->",
    )


def command_line(program: str, argv: Sequence[str]) -> str:
    """``program`` and its arguments as a section shows them: without where its figures were
    written (``--output FILE``, ``--json FILE``, ``--no-write``), which is no part of what was measured."""
    shown: list[str] = []
    skip = False
    for argument in argv:
        if skip:
            skip = False
        elif argument in ("--output", "--json"):
            skip = True
        elif not argument.startswith(("--output=", "--json=", "--no-write")):
            shown.append(argument)
    return shlex.join([*program.split(), *shown])


def stamped(command: str, body: Sequence[str], machine: Machine | None = None) -> list[str]:
    """``body`` after the command and the machine, commit and date it ran on."""
    machine = machine or describe(REPO)
    return [f"`{command}`", "", *machine.lines(), "", *body]


def write(path: Path, name: str, lines: Sequence[str]) -> None:
    """Replace bench ``name``'s section of ``path`` with ``lines`` (appended when it has none yet)."""
    begin, end = markers(name)
    text = "\n".join([begin, "", *lines, "", end])
    current = path.read_text() if path.exists() else HEADER
    # Sections written before the markers named their bench: ``<!-- bench.mirror: begin -->``.
    start = current.find(f"<!-- bench.{name}: begin")
    stop = current.find(end, start)
    if start >= 0 and stop >= 0:
        path.write_text(current[:start] + text + current[stop + len(end) :])
    else:
        path.write_text(current.rstrip("\n") + "\n\n" + text + "\n")
