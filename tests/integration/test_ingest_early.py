"""Sessions an ingest process prepares before the writer gives it any (``postrun.ingest.early``): each
is what preparing it at its task gives, and it is given back only for that task, under rules that
read files as the defaults do."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import signal
import threading
from collections.abc import Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from postrun.agents.cline import list_sessions
from postrun.agents.registry import adapter
from postrun.errors import PostrunError
from postrun.ingest import early, pool
from postrun.ingest.early import GUESSED_RULES, NEW, READING_SETTINGS, Early, prepare_early
from postrun.ingest.prepare import Known, MapRules, Prepared, prepare_location
from postrun.review.exclude import Exclusions
from postrun.store import vault
from postrun.store.actors import StoredHelpers
from postrun.store.db import Database
from tests.reliability.kit import write_synthetic

COUNT = 6
PLENTY = 2**30
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "cline" / "sessions"
    write_synthetic(folder, COUNT, grows=3)
    return folder


@pytest.fixture
def environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """No setting made anywhere: a configuration file of its own, missing, and no variable."""
    for key in READING_SETTINGS:
        monkeypatch.delenv("POSTRUN_" + key.upper(), raising=False)
    monkeypatch.setenv("POSTRUN_CONFIG", str(tmp_path / "config.toml"))
    return {"POSTRUN_CONFIG": str(tmp_path / "config.toml")}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Database]:
    """A fresh store, read as an ingest process reads it."""
    Database.open(tmp_path / "store.db").close()
    with contextlib.closing(Database.open_reader(tmp_path / "store.db")) as reader:
        yield reader


@contextlib.contextmanager
def pipe() -> Iterator[tuple[Connection, Connection]]:
    """The writer's end and an ingest process's, as the pool joins them."""
    writer, process = Pipe()
    with contextlib.closing(writer), contextlib.closing(process):
        yield writer, process


def early_of(
    targets: list[str],
    environ: dict[str, str],
    *,
    sessions: int = PLENTY,
    source_bytes: int = PLENTY,
    agent: str = "cline",
) -> Early:
    with pipe() as (_, process):
        return prepare_early(
            process, agent, targets, environ, sessions=sessions, source_bytes=source_bytes, size_of=pool.source_bytes
        )


def as_replied(result: Any, reader: Database) -> Any:
    """A prepared session as an ingest process's reply holds it (the raw files packed with the store's dictionary)."""
    return result.packed(functools.partial(vault.pack, reader.connection)) if isinstance(result, Prepared) else result


def test_the_first_sessions_are_prepared_as_their_tasks_would_prepare_them(
    root: Path, store: Database, environ: dict[str, str]
) -> None:
    locations = list_sessions(root).sessions
    found = early_of([str(root)], environ, sessions=4)
    assert len(found) == 4
    for location in locations[:4]:
        given = found.take(location, NEW)
        assert given is not None
        at_task = prepare_location(location, NEW, StoredHelpers(store, location.session_id), GUESSED_RULES)
        assert given[0] == location
        assert as_replied(given[1], store) == as_replied(at_task[1], store)
    assert len(found) == 0  # each given back once
    assert found.take(locations[4], NEW) is None  # not prepared early: prepared at its task


def test_those_a_process_will_not_be_asked_for_are_let_go(root: Path, environ: dict[str, str]) -> None:
    """A process is given its sessions in order, not all of them (the writer, or another process,
    prepares the others): those before its task's session are let go, and all at a task past them."""
    locations = list_sessions(root).sessions
    found = early_of([str(root)], environ, sessions=4)
    assert found.take(locations[2], NEW) is not None
    assert len(found) == 1
    assert found.take(locations[1], NEW) is None
    found = early_of([str(root)], environ, sessions=4)
    assert found.take(locations[5], NEW) is None
    assert len(found) == 0


def test_a_session_that_cannot_be_stored_yet_is_prepared_again_at_its_task(root: Path, environ: dict[str, str]) -> None:
    locations = list_sessions(root).sessions
    torn = locations[1].where
    torn.write_bytes(torn.read_bytes()[:200])  # caught half-written: it may be whole by its task
    found = early_of([str(root)], environ, sessions=3)
    assert len(found) == 2
    assert found.take(locations[0], NEW) is not None
    assert found.take(locations[2], NEW) is not None


def test_a_session_the_store_knows_or_refuses_is_prepared_at_its_task(root: Path, environ: dict[str, str]) -> None:
    locations = list_sessions(root).sessions
    found = early_of([str(root)], environ, sessions=3)
    assert found.take(locations[0], Known({})) is None  # stored: its approval snapshot decides
    assert found.take(locations[1], Known(None, PostrunError(str(locations[1].where), "forgotten"))) is None
    assert found.take(locations[2], NEW) is not None


@pytest.mark.parametrize(
    ("rules", "kept"),
    [
        (GUESSED_RULES, True),
        (MapRules(GUESSED_RULES.max_bytes, Exclusions.of([], "/home/u")), True),  # excludes nothing
        (MapRules(64 * 2**20), False),  # a smaller max_file_mb may refuse a file
        (MapRules(GUESSED_RULES.max_bytes, Exclusions.of(["~/secret"], "/home/u")), False),
        (MapRules(GUESSED_RULES.max_bytes, keep_raw=False), False),
    ],
)
def test_rules_that_read_otherwise_drop_every_session_prepared_early(
    root: Path, environ: dict[str, str], rules: MapRules, kept: bool
) -> None:
    assert len(early_of([str(root)], environ).under(rules)) == (COUNT if kept else 0)


def test_it_stops_at_the_writer_s_first_message_and_at_its_limits(root: Path, environ: dict[str, str]) -> None:
    with pipe() as (writer, process):
        writer.send("the store and the rules")
        waiting = prepare_early(
            process, "cline", [str(root)], environ, sessions=PLENTY, source_bytes=PLENTY, size_of=pool.source_bytes
        )
    assert len(waiting) == 0
    assert len(early_of([str(root)], environ, sessions=2)) == 2
    first_two = sum(pool.source_bytes(location) for location in list_sessions(root).sessions[:2])
    assert len(early_of([str(root)], environ, source_bytes=first_two)) == 2
    assert len(early_of([str(root)], environ, source_bytes=first_two - 1)) == 1  # the second would go over


@pytest.mark.parametrize(
    ("variable", "config"),
    [
        ("POSTRUN_EXCLUDE", None),
        ("POSTRUN_MAX_FILE_MB", None),
        ("POSTRUN_KEEP_RAW", None),
        (None, 'exclude = ["~/clients/acme"]\n'),
        (None, "max_file_mb = 64\n"),
        (None, 'exclude = ["~/clients/acme"'),  # broken: the writer reports it, and no guess reads it first
        (None, '"\\u0065xclude" = ["~/clients/acme"]\n'),  # the key spelt with an escape
        (None, b"\xff"),  # not UTF-8
    ],
)
def test_nothing_is_prepared_early_where_the_settings_may_read_files_otherwise(
    root: Path, environ: dict[str, str], variable: str | None, config: str | bytes | None
) -> None:
    """An excluded workspace's transcripts are never read: not even to guess."""
    if variable is not None:
        environ[variable] = "1"
    if config is not None:
        Path(environ["POSTRUN_CONFIG"]).write_bytes(config.encode() if isinstance(config, str) else config)
    assert len(early_of([str(root)], environ)) == 0
    Path(environ["POSTRUN_CONFIG"]).write_text("poll_seconds = 5\n")  # a setting that reads no file otherwise
    if variable is not None:
        del environ[variable]
    assert len(early_of([str(root)], environ)) == COUNT


@pytest.mark.parametrize(
    ("targets", "agent"),
    [(["no-such-session"], "cline"), (["/no/such/folder"], "cline"), (["{root}"], "no-such-agent"), ([], "cline")],
)
def test_targets_it_cannot_read_are_no_guess_and_no_failure(
    root: Path, environ: dict[str, str], targets: list[str], agent: str
) -> None:
    assert len(early_of([target.format(root=root) for target in targets], environ, agent=agent)) == 0


def test_an_ingest_process_gives_back_what_it_prepared_early_and_prepares_the_rest_at_their_tasks(
    root: Path, store: Database, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pool.serve`` as the pool drives it: the first ``GUESSES`` sessions prepared before the
    writer's first message and given back for their tasks, the others prepared at theirs."""
    guesses = 3
    locations = list_sessions(root).sessions
    monkeypatch.setattr(pool.ahead, "TOLD_TARGETS", guesses)
    prepared_early: list[str] = []
    prepared_at_task: list[str] = []
    guessed = threading.Event()

    def counted(into: list[str], location: Any, *rest: Any) -> Any:
        into.append(location.session_id)
        if len(prepared_early) == guesses:
            guessed.set()
        return prepare_location(location, *rest)

    monkeypatch.setattr(early, "prepare_location", functools.partial(counted, prepared_early))
    monkeypatch.setattr(pool, "prepare_location", functools.partial(counted, prepared_at_task))
    replies: list[Any] = []

    failed: list[BaseException] = []

    def writer_side(writer: Connection) -> None:
        try:
            assert guessed.wait(60)  # the process guessed before the writer named the store
            writer.send((store.path, GUESSED_RULES))
            for location in locations:
                writer.send((location, NEW))
                replies.append(writer.recv())
            writer.send(None)
        except BaseException as exc:  # noqa: BLE001 - said below; the process must not wait on
            failed.append(exc)
            writer.close()  # end-of-file to the process

    with pipe() as (writer, process):
        thread = threading.Thread(target=writer_side, args=(writer,))
        thread.start()
        try:
            pool.serve(process, "cline", [str(root)])
        finally:  # what an ingest process sets for itself
            gc.enable()
            signal.signal(signal.SIGINT, signal.default_int_handler)
        thread.join(60)
    assert not thread.is_alive()
    assert failed == []
    assert prepared_early == [location.session_id for location in locations[:guesses]]
    assert prepared_at_task == [location.session_id for location in locations[guesses:]]
    expected = [
        as_replied(prepare_location(location, NEW, StoredHelpers(store, location.session_id), GUESSED_RULES)[1], store)
        for location in locations
    ]
    assert [result for result, _ in replies] == expected


@pytest.mark.parametrize(
    ("kind", "fixture", "sessions"),
    [
        ("cline", "cline-real", "*/data/sessions"),
        ("codex", "codex-real", "*/sessions"),
        ("claude-code", "claude-code-real", "*/claude/projects"),
    ],
)
def test_a_target_names_the_same_sessions_without_a_lookup_root(kind: str, fixture: str, sessions: str) -> None:
    """What an early session is matched by: its location as the writer lists it (with the lookup
    root the settings give) and as the process does (none) are the same, for every agent."""
    roots = sorted(FIXTURES.joinpath(fixture).glob(sessions))
    assert roots
    for root in roots:
        given = adapter(kind).resolve_targets([str(root)], [root])
        assert given.sessions
        assert adapter(kind).resolve_targets([str(root)], [Path(os.devnull)]).sessions == given.sessions
