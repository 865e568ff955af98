"""Suite 1, torn writes: a session file caught at any byte while Cline rewrites it.

Cline rewrites ``<id>.messages.json`` and ``<id>.json`` whole and in place, so a reader can
see any prefix of the new content; a file that shrinks can show the complete new value
followed by a stale tail of the old one. For realistic sessions (every shared fixture, the
real Cline runs, and a generated large session), each file is cut at a dense sample of byte
offsets, including every byte and every structural boundary near the end, and:

- parsing (the pure level) gives either the mid-write error or the complete value itself;
- ingesting through the store raises nothing but ``NotParseableYet`` and writes nothing;
- the completed file then ingests to exactly the records a fresh ingest gives.

The capture's side of the same promise (a torn file is logged once per change, retried on
the next change) is proven end to end by ``tests/e2e/test_capture.py::test_torn_file_then_its_completion``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.history import open_session
from postrun.agents.cline import MappingCache, SessionLocation, is_safe_name
from postrun.errors import NotParseableYet
from postrun.ingest.ingester import Ingester
from postrun.jsonio import parse_json
from postrun.store.db import Database
from tests.conftest import FIXTURES
from tests.reliability.kit import StoredRecords, differences, read_records, store_problems
from tests.support.capture_process import snapshots, write_in_place

MAX_BYTES = 512 * 2**20
STRUCTURAL = frozenset(b'{}[],:"\n')


@dataclass(frozen=True)
class Case:
    """One session: its final files, and an earlier version stored before the tear."""

    name: str
    data_dir: Path  # a Cline data dir to copy (globalState.json, settings/ next to sessions/)
    session_id: str
    messages: bytes
    manifest: bytes | None
    previous_messages: bytes


def _drop_last_messages(messages: bytes, count: int = 2) -> bytes:
    document = json.loads(messages)
    if isinstance(document, list):
        return orjson.dumps(document[:-count], option=orjson.OPT_INDENT_2)
    return orjson.dumps(dict(document, messages=document["messages"][:-count]), option=orjson.OPT_INDENT_2)


def _previous_real_version(case_dir: Path, session_id: str, final: bytes) -> bytes | None:
    """The last version of the messages file that real Cline wrote with fewer messages than its final one."""
    name = f"{session_id}/{session_id}.messages.json"
    count = len(json.loads(final)["messages"])
    versions = [
        s.source.read_bytes() for s in snapshots(f"cline-real/{case_dir.name}") if s.relative == name and s.valid_json
    ]
    earlier = [v for v in versions if len(json.loads(v)["messages"]) < count]
    return earlier[-1] if earlier else None


def fixture_cases() -> Iterator[Case]:
    for case_dir in sorted([*(FIXTURES / "cline").iterdir(), *(FIXTURES / "cline-real").iterdir()]):
        sessions = case_dir / "data" / "sessions"
        if not sessions.is_dir():
            continue
        for folder in sorted(sessions.iterdir()):
            messages_path = folder / f"{folder.name}.messages.json"
            if not is_safe_name(folder.name) or not messages_path.is_file():
                continue  # junk the fixture keeps next to its sessions
            messages = messages_path.read_bytes()
            try:
                json.loads(messages)
            except ValueError:
                continue  # the fixture's own torn file: it has no complete version
            manifest_path = folder / f"{folder.name}.json"
            previous = None
            if case_dir.parent.name == "cline-real":
                previous = _previous_real_version(case_dir, folder.name, messages)
            yield Case(
                name=f"{case_dir.name}/{folder.name}",
                data_dir=case_dir / "data",
                session_id=folder.name,
                messages=messages,
                manifest=manifest_path.read_bytes() if manifest_path.is_file() else None,
                previous_messages=previous or _drop_last_messages(messages),
            )


FIXTURE_CASES = list(fixture_cases())


def generated_case(tmp_path: Path, target_bytes: int) -> Case:
    """A large open session from the benchmark's generator (realistic shapes and sizes)."""
    writer = open_session(7, target_bytes=target_bytes)
    data_dir = tmp_path / "generated"
    written = writer.write(data_dir / "sessions", ended=False)
    return Case(
        name="generated",
        data_dir=data_dir,
        session_id=written.session_id,
        messages=written.messages_path.read_bytes(),
        manifest=written.manifest_path.read_bytes(),
        previous_messages=orjson.dumps(
            writer.messages_document(limit=len(writer.messages) - 3), option=orjson.OPT_INDENT_2
        ),
    )


def cut_offsets(data: bytes, *, every_byte_at_end: int, boundaries_at_end: int, spread: int) -> list[int]:
    """Where a writer can be caught: the first bytes, every byte near the end, every
    structural boundary (just before and just after it) further back, and evenly spread
    offsets in between. Never the whole file."""
    size = len(data)
    offsets = set(range(min(64, size)))
    offsets.update(range(max(0, size - every_byte_at_end), size))
    for index in range(max(0, size - boundaries_at_end), size):
        if data[index] in STRUCTURAL or data[index] >= 0x80:  # multi-byte characters too
            offsets.update((index, index + 1))
    offsets.update(range(0, size, max(1, size // spread)))
    offsets.discard(size)
    return sorted(offsets)


def ci_offsets(data: bytes) -> list[int]:
    return cut_offsets(data, every_byte_at_end=512, boundaries_at_end=4096, spread=200)


def all_offsets(data: bytes) -> list[int]:
    return list(range(len(data)))


# -- the pure level: parsing a prefix --------------------------------------------------------


def check_prefixes_parse(data: bytes, offsets: list[int], kind: str) -> int:
    """Every prefix is either not parseable yet or the complete value itself; returns how many tore."""
    complete = parse_json(data, "file", kind)
    torn = 0
    for offset in offsets:
        try:
            value = parse_json(data[:offset], "file", kind)
        except NotParseableYet as exc:
            assert exc.kind == kind
            torn += 1
        except Exception as exc:
            raise AssertionError(f"cut at byte {offset}/{len(data)}: {type(exc).__name__}: {exc}") from exc
        else:
            # Only a cut in trailing whitespace leaves a complete document: the same one.
            assert value == complete, f"cut at byte {offset}/{len(data)} parsed to a different value"
            assert data[offset:].isspace(), f"cut at byte {offset}/{len(data)} parsed"
    return torn


@pytest.mark.parametrize("case", FIXTURE_CASES, ids=[c.name for c in FIXTURE_CASES])
def test_every_prefix_of_every_fixture_file_is_torn_or_complete(case: Case) -> None:
    for data, kind in ((case.messages, "messages"), (case.manifest, "manifest"), (case.previous_messages, "messages")):
        if data is not None:
            assert check_prefixes_parse(data, all_offsets(data), kind) == len(data.rstrip())


def test_prefixes_of_a_large_generated_session(tmp_path: Path) -> None:
    case = generated_case(tmp_path, 1_000_000)
    offsets = ci_offsets(case.messages)
    assert check_prefixes_parse(case.messages, offsets, "messages") == len(offsets)


@pytest.mark.slow
def test_prefixes_of_a_very_large_generated_session(tmp_path: Path) -> None:
    case = generated_case(tmp_path, 8_000_000)
    offsets = cut_offsets(case.messages, every_byte_at_end=2048, boundaries_at_end=8192, spread=1000)
    assert check_prefixes_parse(case.messages, offsets, "messages") == len(offsets)


# -- through the store -----------------------------------------------------------------------


def dump_store(db: Path) -> list[tuple[str, list[str]]]:
    """Every row of every table, as text: equal dumps mean nothing at all was written."""
    import apsw

    from postrun.store import codec

    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    codec.register(connection)  # the search table reads its text from the steps through them
    try:
        with connection:
            tables = [
                row[0]
                for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            ]
            return [
                (table, sorted(repr(tuple(row)) for row in connection.execute(f'SELECT * FROM "{table}"')))
                for table in tables
            ]
    finally:
        connection.close()


class TornSeries:
    """One session in a store, with its earlier version stored, torn at many offsets."""

    def __init__(self, case: Case, tmp_path: Path) -> None:
        self.case = case
        self.tmp_path = tmp_path
        self.data_dir = tmp_path / "cline"
        shutil.copytree(case.data_dir, self.data_dir, ignore=shutil.ignore_patterns("sessions"))
        self.root = self.data_dir / "sessions"
        self.folder = self.root / case.session_id
        self.folder.mkdir(parents=True)
        self.messages_path = self.folder / f"{case.session_id}.messages.json"
        self.manifest_path = self.folder / f"{case.session_id}.json"
        self.location = SessionLocation.in_root(self.root, case.session_id)
        self.database = Database.open(tmp_path / "store" / "postrun.db")
        self.ingester = Ingester(self.database, max_bytes=MAX_BYTES)
        self.cache: MappingCache | None = None

    def write(self, messages: bytes, manifest: bytes | None) -> None:
        write_in_place(self.messages_path, messages)
        if manifest is not None:
            write_in_place(self.manifest_path, manifest)

    def ingest(self) -> str:
        outcome, self.cache = self.ingester.ingest(self.location, self.cache)
        return outcome.status

    def store_previous(self) -> None:
        self.write(self.case.previous_messages, self.case.manifest)
        assert self.ingest() == "ingested"

    def tear(self, which: str, offsets: list[int]) -> None:
        """Cut ``which`` file at each offset (the other one complete): always NotParseableYet, nothing written."""
        complete = self.case.messages if which == "messages" else self.case.manifest
        assert complete is not None
        other = self.case.manifest if which == "messages" else self.case.messages
        if other is not None:
            write_in_place(self.manifest_path if which == "messages" else self.messages_path, other)
        target = self.messages_path if which == "messages" else self.manifest_path
        changes = self.database.connection.total_changes()
        for offset in offsets:
            if complete[offset:].isspace():
                continue  # only trailing whitespace is missing: the file is complete
            write_in_place(target, complete[:offset])
            try:
                self.ingest()
            except NotParseableYet as exc:
                assert exc.kind == which and exc.where == str(target), exc
            except Exception as exc:
                raise AssertionError(
                    f"{which} cut at byte {offset}/{len(complete)}: {type(exc).__name__}: {exc}"
                ) from exc
            else:
                raise AssertionError(f"{which} cut at byte {offset}/{len(complete)} was ingested")
            assert self.database.connection.total_changes() == changes, f"{which} cut at {offset} wrote to the store"

    def fresh(self) -> dict[str, StoredRecords]:
        """What a fresh ingest of the files as they are now gives, in a store of its own."""
        db = self.tmp_path / f"fresh-{len(list(self.tmp_path.glob('fresh-*')))}" / "postrun.db"
        with Database.open(db) as database:
            Ingester(database, max_bytes=MAX_BYTES).ingest(self.location)
        return read_records(db)

    def close(self) -> None:
        self.database.close()


def run_series(case: Case, tmp_path: Path, offsets: Any) -> None:
    series = TornSeries(case, tmp_path)
    try:
        series.store_previous()
        before = dump_store(series.database.path)
        series.tear("messages", offsets(case.messages))
        if case.manifest is not None:
            series.tear("manifest", offsets(case.manifest))
        assert dump_store(series.database.path) == before  # not one row changed, history included
        series.write(case.messages, case.manifest)
        assert series.ingest() == "updated"
        found = read_records(series.database.path)
        assert differences(found, series.fresh()) == []
        assert store_problems(series.database.path) == []
    finally:
        series.close()


@pytest.mark.parametrize("case", FIXTURE_CASES, ids=[c.name for c in FIXTURE_CASES])
def test_torn_fixture_files_never_reach_the_store(case: Case, tmp_path: Path) -> None:
    run_series(case, tmp_path, ci_offsets)


def test_torn_large_session_never_reaches_the_store(tmp_path: Path) -> None:
    run_series(generated_case(tmp_path, 1_000_000), tmp_path, ci_offsets)


@pytest.mark.slow
@pytest.mark.parametrize("case", FIXTURE_CASES, ids=[c.name for c in FIXTURE_CASES])
def test_torn_fixture_files_at_every_byte(case: Case, tmp_path: Path) -> None:
    run_series(case, tmp_path, all_offsets)


@pytest.mark.slow
def test_torn_very_large_session_never_reaches_the_store(tmp_path: Path) -> None:
    run_series(
        generated_case(tmp_path, 8_000_000),
        tmp_path,
        lambda data: cut_offsets(data, every_byte_at_end=1024, boundaries_at_end=4096, spread=300),
    )


# -- complete value + stale tail (a file that shrinks in place) -------------------------------


def shrinks(case: Case) -> Iterator[tuple[str, bytes, bytes]]:
    """(file, old, new) pairs where the new content is shorter than the old one."""
    longer = json.loads(case.messages)
    extra = {"id": "late", "role": "assistant", "ts": 1, "content": [{"type": "text", "text": "x" * 500}]}
    if isinstance(longer, list):
        longer.append(extra)
    else:
        longer["messages"].append(extra)
    # A checkpoint restore: the messages file loses its last messages.
    yield "messages", case.messages, case.previous_messages
    # A message that got shorter is the same shrink inside the complete value.
    yield "messages", orjson.dumps(longer, option=orjson.OPT_INDENT_2), case.messages
    if case.manifest is not None:
        manifest = json.loads(case.manifest)
        ended = dict(manifest, ended_at="2026-09-21T16:00:00.000Z", status="completed", exit_code=0)
        resumed = {key: value for key, value in manifest.items() if key not in ("ended_at", "exit_code")}
        # A session that resumes: Cline deletes ended_at, the manifest shrinks.
        yield (
            "manifest",
            orjson.dumps(ended, option=orjson.OPT_INDENT_2),
            orjson.dumps(resumed, option=orjson.OPT_INDENT_2),
        )


def real_shrinks() -> Iterator[tuple[str, str, bytes, bytes]]:
    """Every real rewrite where Cline's file got shorter: (case, file, old, new)."""
    for case_dir in sorted((FIXTURES / "cline-real").iterdir()):
        if not (case_dir / "snapshots").is_dir():
            continue
        last: dict[str, bytes] = {}
        for snapshot in snapshots(f"cline-real/{case_dir.name}"):
            data = snapshot.source.read_bytes()
            if not snapshot.valid_json:
                continue
            old = last.get(snapshot.relative)
            if old is not None and len(data) < len(old):
                yield case_dir.name, snapshot.relative, old, data
            last[snapshot.relative] = data


@pytest.mark.parametrize("case", FIXTURE_CASES, ids=[c.name for c in FIXTURE_CASES])
def test_complete_value_with_a_stale_tail_is_the_new_content(case: Case, tmp_path: Path) -> None:
    for number, (which, old, new) in enumerate(shrinks(case)):
        assert len(new) < len(old)
        series = TornSeries(case, tmp_path / str(number))
        try:
            other = case.manifest if which == "messages" else case.messages
            for content in (old, new + old[len(new) :]):  # stored, then caught before the truncation
                series.write(*((content, other) if which == "messages" else (other, content)))
                series.ingest()
            found = read_records(series.database.path)
            series.write(*((new, other) if which == "messages" else (other, new)))
            assert differences(found, series.fresh()) == [], f"{which} shrink #{number}"
        finally:
            series.close()


def test_real_cline_shrinks_with_their_stale_tails() -> None:
    found = list(real_shrinks())
    assert found  # real Cline runs do shrink both files
    for case, relative, old, new in found:
        kind = "messages" if relative.endswith(".messages.json") else "manifest"
        assert parse_json(new + old[len(new) :], relative, kind) == parse_json(new, relative, kind), (case, relative)


# -- a helper's transcript torn ------------------------------------------------------------


def helper_cases() -> Iterator[tuple[str, Path]]:
    """(case, session folder) of every fixture session that has helper transcripts."""
    for case_dir in sorted([*(FIXTURES / "cline").iterdir(), *(FIXTURES / "cline-real").iterdir()]):
        for folder in sorted((case_dir / "data" / "sessions").glob("[0-9]*/")):
            helpers = [p for p in folder.glob("*.messages.json") if p.name != f"{folder.name}.messages.json"]
            if helpers and all(_parses(p) for p in helpers):
                yield f"{case_dir.name}/{folder.name}", folder


def _parses(path: Path) -> bool:
    try:
        json.loads(path.read_bytes())
    except ValueError:
        return False
    return True


HELPER_CASES = list(helper_cases())


def helper_offsets(data: bytes) -> list[int]:
    return cut_offsets(data, every_byte_at_end=64, boundaries_at_end=1024, spread=40)


@pytest.mark.parametrize(("name", "folder"), HELPER_CASES, ids=[name for name, _ in HELPER_CASES])
def test_a_torn_helper_keeps_its_stored_steps_and_never_holds_the_session_back(
    name: str, folder: Path, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(folder, root / folder.name)
    location = SessionLocation.in_root(root, folder.name)
    db = tmp_path / "store" / "postrun.db"
    with Database.open(db) as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES)
        assert ingester.ingest(location)[0].status == "ingested"
        stored = read_records(db)
        for helper in sorted(location.folder.glob("*.messages.json")):
            if helper == location.messages:
                continue
            complete = helper.read_bytes()
            for offset in helper_offsets(complete):
                if complete[offset:].isspace():
                    continue
                write_in_place(helper, complete[:offset])
                outcome, _ = ingester.ingest(location)
                assert [problem.where for problem in outcome.unread] == [str(helper)], (helper.name, offset)
                assert isinstance(outcome.unread[0], NotParseableYet)
                assert differences(read_records(db), stored) == [], f"{helper.name} cut at {offset}"
            write_in_place(helper, complete)
        assert ingester.ingest(location)[0].unread == ()
    assert differences(read_records(db), stored) == []
    assert store_problems(db) == []
