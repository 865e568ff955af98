"""Sessions an ingest process prepares before the writer gives it any (``pool.serve``).

``postrun ingest`` starts its ingest processes as the interpreter starts (``ahead.start_early``),
and a process is ready well before the writer has imported the library, loaded the settings,
listed its targets and opened the store: its core would idle meanwhile. So the first process
is told the command's first targets, and prepares their first sessions then, as sessions the
store holds nothing of (no approval snapshot, no helper: a helper's row needs its session's)
under the default settings, unless the environment or the configuration file may set how files
are read (``exclude``: an excluded workspace's transcripts are never read; ``max_file_mb``,
``keep_raw``). It gives one back only for a task that says exactly that, under rules that read
files as the defaults do; what it gives is then what preparing the session at that task would
give, but for when its files were read: a file changed since is read again as any changed file
is, at its next ingest.
"""

from __future__ import annotations

import os
import pickle
import tomllib
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from postrun.agents.registry import Location, adapter, default_kind
from postrun.ingest.prepare import Known, Mapped, MapRules, Prepared, prepare_location
from postrun.jsonio import MAX_FILE_MB
from postrun.paths import config_file_location, env_value, working_dir

NEW = Known(None)  # what the writer says of a session the store holds nothing of
GUESSED_RULES = MapRules(MAX_FILE_MB * 2**20)  # the default settings': no exclude, raw copies kept
# The settings that decide how files are read, as the environment and the configuration file
# name them: read alone, as this process loads no settings (``postrun.settings`` names them too).
READING_SETTINGS = ("exclude", "max_file_mb", "keep_raw")


def settings_may_read_otherwise(environ: Mapping[str, str]) -> bool:
    """Whether the environment or the configuration file (``POSTRUN_CONFIG``'s, else the default
    one: a guess is only made for a command line without ``--config``, ``ahead.start_early``) may
    set how files are read, so that a guess under the defaults might read what the settings would
    not: a variable of ``READING_SETTINGS`` set, the file setting one of them, or a file that
    cannot be read as the settings read it (the writer then reports it)."""
    if any(env_value(environ, "POSTRUN_" + key.upper()) is not None for key in READING_SETTINGS):
        return True
    try:
        data = config_file_location(None, environ, base=working_dir())[0].read_bytes()
        table = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        return False
    except Exception:  # noqa: BLE001 - whatever it is, the writer says it; a guess is not made
        return True
    return any(key in table for key in READING_SETTINGS)


def reads_as_guessed(rules: MapRules) -> bool:
    """Whether sessions prepared under ``rules`` come out as under ``GUESSED_RULES``: the same
    size limit and raw copies, no workspace excluded, no capture's memos."""
    return (
        rules.max_bytes == GUESSED_RULES.max_bytes
        and rules.keep_raw == GUESSED_RULES.keep_raw
        and (rules.exclusions is None or not rules.exclusions.patterns)
        and rules.flag_memo is None
        and rules.valid_memo is None
    )


# A session prepared early: its location, what it was prepared into (a ``Prepared`` pickled, as
# ``Prepared.taken`` leaves it), and how long that took (ms). Pickled: held as a session's many
# small objects, it left the process's memory a few MB larger for the rest of the ingest (Python
# keeps the pages their objects were in), where its one bytes object is given back whole.
_Found = tuple[Location, bytes, float]


class Early:
    """The sessions an ingest process prepared early, each given back at most once."""

    def __init__(self, found: list[_Found]) -> None:
        self._found = found

    def __len__(self) -> int:
        return len(self._found)

    def under(self, rules: MapRules) -> Early:
        """What is still good once the writer's ``rules`` are known: all, or nothing."""
        return self if reads_as_guessed(rules) else Early([])

    def take(self, location: Location, known: Known) -> Mapped | None:
        """The session of ``location`` as prepared early, if the writer's task (``location``,
        ``known``) is the one it was prepared for. A process is given its sessions in their
        order, but not all of them (the writer prepares some, another process others): those
        before a task's session, and all of them at a task past them, are never asked for, and
        are let go."""
        for index, (found, _, _) in enumerate(self._found):
            if found == location:
                _, result, mapped_ms = self._found[index]
                del self._found[: index + 1]
                return (location, pickle.loads(result), mapped_ms) if known == NEW else None
        self._found.clear()
        return None


def prepare_early(
    connection: Connection,
    agent: str,
    targets: Sequence[str],
    environ: Mapping[str, str],
    *,
    sessions: int,
    source_bytes: int,
    size_of: Callable[[Location], int],
) -> Early:
    """The first sessions of ``targets`` (of ``agent``; blank: the default kind) prepared as new
    to the store, until the writer's first message is waiting on ``connection``, ``sessions``
    of them are prepared, or the next would take their source over ``source_bytes`` (``size_of``
    each); none when ``environ`` or its configuration file may set how files are read."""
    found: list[_Found] = []
    try:
        if not targets or settings_may_read_otherwise(environ):
            return Early(found)
        # No lookup root: a bare id names a session only once the settings say where, and the
        # writer resolves it then.
        listing = adapter(agent or default_kind()).resolve_targets(targets, [Path(os.devnull)])
        size = 0
        for location in listing.sessions[:sessions]:
            size += size_of(location)
            if size > source_bytes or connection.poll(0):
                break
            _, result, mapped_ms = prepare_location(location, NEW, {}, GUESSED_RULES)
            # A session that cannot be stored now (a file caught half-written, say) may be by its
            # task: it is read again then.
            if isinstance(result, Prepared):
                # Its steps packed and its raw files read now, as a reply would have them but for
                # the vault's dictionary, which only the store holds.
                found.append((location, pickle.dumps(result.taken(), pickle.HIGHEST_PROTOCOL), mapped_ms))
    except Exception:  # noqa: BLE001 - a guess: whatever it met, the writer's tasks are prepared as ever
        return Early([])
    return Early(found)
