"""The vault on a real store: raw copies kept with each ingest, versions, reingest, forget."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import orjson
import pytest
import zstandard

from postrun.agents.cline import SessionLocation
from postrun.errors import NotFound, NotParseableYet, PostrunError
from postrun.ingest.ingester import Ingester
from postrun.records import RawFile, SourceFile
from postrun.store import dictionary, vault
from postrun.store.db import STORE_VERSION, Database
from postrun.store.migrations import MIGRATIONS
from postrun.store.query import load_envelope
from tests.reliability.kit import Synthetic, read_records, synthetic_id
from tests.support.capture_process import copy_data, snapshots

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.ticks = itertools.count()

    def __call__(self) -> datetime:
        return T0 + timedelta(seconds=next(self.ticks))


@pytest.fixture
def database(tmp_path: Path):
    with Database.open(tmp_path / "store" / "postrun.db") as db:
        yield db


def ingester(database: Database, **kwargs: object) -> Ingester:
    return Ingester(database, max_bytes=2**26, clock=Clock(), hostname="testhost", **kwargs)  # type: ignore[arg-type]


def blob_count(database: Database) -> int:
    return int(database.execute("SELECT count(*) FROM raw_blobs").get)


def test_an_append_only_session_written_50_times_keeps_one_version(tmp_path: Path, database: Database) -> None:
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(synthetic_id(1), seed=1)
    ingest = ingester(database)
    location = SessionLocation.in_root(root, session.session_id)
    for _ in range(50):
        session.grow()
        session.write(root)
        ingest.ingest(location)
    versions = vault.kept_versions(database, session.session_id)
    assert [v.number for v in versions] == [1]
    (newest,) = versions
    assert sorted(f.name for f in newest.files) == [
        f"sessions/{session.session_id}/{session.session_id}.json",
        f"sessions/{session.session_id}/{session.session_id}.messages.json",
    ]
    for kept in newest.files:
        assert vault.read_blob(database, kept.hash) == Path(kept.fingerprint.path).read_bytes()
    assert blob_count(database) == 2  # every superseded blob was dropped


def test_a_checkpoint_restore_keeps_the_version_it_replaced(tmp_path: Path, database: Database) -> None:
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(synthetic_id(2), seed=2)
    for _ in range(12):
        session.grow()
    session.write(root)
    messages = root / session.session_id / f"{session.session_id}.messages.json"
    before = messages.read_bytes()
    ingest = ingester(database)
    ingest.ingest(SessionLocation.in_root(root, session.session_id))
    session.restore()
    session.grow()
    session.write(root)
    after = messages.read_bytes()
    ingest.ingest(SessionLocation.in_root(root, session.session_id))

    first, second = vault.kept_versions(database, session.session_id)
    assert first.replaced_at == "2026-11-29T12:00:01.000Z" and second.replaced_at is None
    by_name = {
        v.number: {f.name.rsplit("/", 1)[1]: vault.read_blob(database, f.hash) for f in v.files}
        for v in (first, second)
    }
    assert by_name[1][messages.name] == before and by_name[2][messages.name] == after
    # The unchanged manifest is one blob shared by both versions.
    assert by_name[1][f"{session.session_id}.json"] == by_name[2][f"{session.session_id}.json"]
    assert blob_count(database) == 3
    assert vault.version_counts(database) == {session.session_id: 2}


def test_torn_versions_of_real_cline_runs_are_never_kept(tmp_path: Path, database: Database) -> None:
    """Replay every real snapshot sequence, ingesting after each write: what the vault keeps is
    always a valid version Cline wrote, and each transcript keeps one version."""
    ingest = ingester(database)
    valid: set[bytes] = set()
    torn = 0
    for case in ("a_read_edit", "b_run_commands", "e_plan_then_act", "h_subagents"):
        root = copy_data(f"cline-real/{case}", tmp_path / case)
        valid.update(path.read_bytes() for path in (root.parent / "settings").glob("*.json"))  # kept as they are
        for path in root.glob("*/*.json"):
            path.unlink()  # start from nothing: the snapshots write every version
        for snapshot in snapshots(f"cline-real/{case}"):
            target = root / snapshot.relative
            target.write_bytes(snapshot.source.read_bytes())
            if snapshot.valid_json:
                valid.add(snapshot.source.read_bytes())
            session_id = snapshot.relative.split("/")[0]
            if not (root / session_id / f"{session_id}.messages.json").exists():
                continue
            try:
                ingest.ingest(SessionLocation.in_root(root, session_id))
            except NotParseableYet:
                torn += 1
    assert torn >= 1, "the replay must meet torn files"
    kept = [vault.read_blob(database, hash_) for (hash_,) in database.execute("SELECT hash FROM raw_files")]
    assert kept and [data[:200] for data in kept if data not in valid] == []
    for session_id in vault.vaulted_sessions(database):
        newest = vault.kept_versions(database, session_id)[-1]
        transcripts = [
            f for v in vault.kept_versions(database, session_id) for f in v.files if f.name.endswith(".messages.json")
        ]
        for name in {f.name for f in transcripts}:  # the lead's and each helper's
            assert len({f.hash for f in transcripts if f.name == name}) == 1, name
        assert any(f.name.endswith(".messages.json") for f in newest.files)


def test_keep_raw_off_keeps_nothing_and_reingest_refuses_copies_older_than_the_records(
    tmp_path: Path, database: Database
) -> None:
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(synthetic_id(3), seed=3)
    session.write(root)
    location = SessionLocation.in_root(root, session.session_id)
    ingester(database, keep_raw=False).ingest(location)
    assert blob_count(database) == 0
    with pytest.raises(NotFound, match="no raw copies kept"):
        ingester(database).reingest(session.session_id)
    ingester(database).ingest(location)  # unchanged records, but now copies
    session.grow()
    session.write(root)
    ingester(database, keep_raw=False).ingest(location)
    stored = read_records(database.path)
    with pytest.raises(PostrunError, match="older than its records"):
        ingester(database).reingest(session.session_id)
    assert read_records(database.path) == stored


def test_reingest_rebuilds_deleted_records_from_the_copies_alone(tmp_path: Path, database: Database) -> None:
    data_dir = tmp_path / "cline"
    root = data_dir / "sessions"
    (data_dir / "settings").mkdir(parents=True)
    (data_dir / "settings" / "global-settings.json").write_bytes(b'{"toolAutoApprove": false}')
    session = Synthetic(synthetic_id(4), seed=4)
    for _ in range(8):
        session.grow()
    session.write(root)
    ingester(database).ingest(SessionLocation.in_root(root, session.session_id))
    envelope = load_envelope(database, session.session_id)
    records = read_records(database.path)
    settings = [f for f in vault.kept_versions(database, session.session_id)[-1].files if f.settings]
    assert [f.name for f in settings] == ["settings/global-settings.json"]

    for path in data_dir.rglob("*"):
        if path.is_file():
            path.unlink()
    with database.transaction() as connection:
        for table in ("step_search", "steps", "turns", "actors", "segments", "history"):
            if table == "step_search":
                connection.execute("DELETE FROM step_search")
            else:
                connection.execute(f"DELETE FROM {table} WHERE session_id = ?", (session.session_id,))
        connection.execute("DELETE FROM sessions WHERE id = ?", (session.session_id,))
    outcome = ingester(database).reingest(session.session_id)
    assert outcome.status == "ingested"
    assert load_envelope(database, session.session_id) == envelope
    assert read_records(database.path) == records  # the approvals too, from the kept settings file


def test_forget_raw_deletes_the_sessions_copies_and_only_its_own_blobs(tmp_path: Path, database: Database) -> None:
    root = tmp_path / "cline" / "sessions"
    twins = [Synthetic(synthetic_id(i), seed=5) for i in (5, 6)]
    for twin in twins:
        twin.write(root)
        ingester(database).ingest(SessionLocation.in_root(root, twin.session_id))
    shared = blob_count(database)
    with database.transaction() as connection:
        assert vault.forget_raw(connection, twins[0].session_id) == 2
    assert vault.vaulted_sessions(database) == [twins[1].session_id]
    assert blob_count(database) <= shared
    for kept in vault.kept_versions(database, twins[1].session_id)[-1].files:
        assert vault.read_blob(database, kept.hash) == Path(kept.fingerprint.path).read_bytes()


def test_a_store_of_the_previous_release_gains_the_vault_in_place(tmp_path: Path) -> None:
    path = tmp_path / "postrun.db"
    old = apsw.Connection(str(path))
    for migration in MIGRATIONS[:2]:
        old.execute(migration)
    old.execute("pragma user_version=2")
    old.close()
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(synthetic_id(7), seed=7)
    session.write(root)
    with Database.open(path) as database:
        assert database.user_version() == STORE_VERSION
        ingester(database).ingest(SessionLocation.in_root(root, session.session_id))
        assert vault.version_counts(database) == {session.session_id: 1}


def test_kept_version_json_names_files_and_sizes(tmp_path: Path, database: Database) -> None:
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(synthetic_id(8), seed=8)
    session.write(root)
    ingester(database).ingest(SessionLocation.in_root(root, session.session_id))
    (version,) = vault.kept_versions(database, session.session_id)
    shown = orjson.loads(orjson.dumps(version.as_json()))
    assert shown["version"] == 1 and shown["replaced_at"] is None
    assert sum(f["bytes"] for f in shown["files"]) == sum(
        p.stat().st_size for p in (root / session.session_id).iterdir()
    )


def marked_session(root: Path, index: int, marker: str) -> Synthetic:
    session = Synthetic(synthetic_id(index), seed=index)
    for _ in range(30):
        session.grow()
    session.messages[0]["content"][0]["text"] += f" {marker}"
    session.write(root)
    return session


def test_a_dictionary_of_earlier_copies_compresses_later_ones_and_forget_removes_it(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dictionary, "BUILD_AFTER_BYTES", 60_000)
    monkeypatch.setattr(dictionary, "CONTENT_BYTES", 40_000)
    root = tmp_path / "cline" / "sessions"
    ingest = ingester(database)
    sessions = [marked_session(root, index, f"marker-{index}-xyzzy") for index in range(12)]
    for session in sessions:
        ingest.ingest(SessionLocation.in_root(root, session.session_id))
    (cut_from,) = [orjson.loads(row[0]) for row in database.execute("SELECT sessions FROM raw_dictionaries")]
    assert cut_from and set(cut_from) < {s.session_id for s in sessions}
    with_dictionary = int(database.execute("SELECT count(*) FROM raw_blobs WHERE dictionary IS NOT NULL").get)
    assert with_dictionary >= 4

    def all_copies_read_back() -> None:
        for session_id in vault.vaulted_sessions(database):
            for kept in vault.kept_versions(database, session_id)[-1].files:
                assert vault.read_blob(database, kept.hash) == Path(kept.fingerprint.path).read_bytes()

    all_copies_read_back()
    plain = zstandard.ZstdCompressor(level=dictionary.LEVEL)
    stored, alone = 0, 0
    for hash_, data in database.execute("SELECT hash, data FROM raw_blobs WHERE dictionary IS NOT NULL"):
        stored += len(data)
        alone += len(plain.compress(vault.read_blob(database, hash_)))
    assert stored < alone * 0.9  # it pays, or it would not be there

    forgotten = cut_from[0]
    marker = next(s for s in sessions if s.session_id == forgotten).messages[0]["content"][0]["text"].split()[-1]
    with database.transaction() as connection:
        vault.forget_raw(connection, forgotten)
    assert database.execute("SELECT count(*) FROM raw_dictionaries").get == 0
    assert database.execute("SELECT count(*) FROM raw_blobs WHERE dictionary IS NOT NULL").get == 0
    all_copies_read_back()
    for hash_, _ in database.execute("SELECT hash, size FROM raw_blobs"):
        assert marker.encode() not in vault.read_blob(database, hash_)


def test_the_copies_kept_before_the_dictionary_are_compressed_with_it_within_a_budget(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dictionary, "BUILD_AFTER_BYTES", 60_000)
    monkeypatch.setattr(dictionary, "CONTENT_BYTES", 40_000)
    monkeypatch.setattr(dictionary, "RECOMPRESS_BYTES", 30_000)
    root = tmp_path / "cline" / "sessions"
    ingest = ingester(database)
    before: dict[str, int] = {}  # the copies kept before the cut: raw size by hash
    for index in range(12):
        session = marked_session(root, index, f"marker-{index}-xyzzy")
        if not database.execute("SELECT count(*) FROM raw_dictionaries").get:
            before = {str(h): int(size) for h, size in database.execute("SELECT hash, size FROM raw_blobs")}
        ingest.ingest(SessionLocation.in_root(root, session.session_id))
    assert database.execute("SELECT count(*) FROM raw_dictionaries").get == 1
    recompressed = {
        str(h): int(size)
        for h, size, used in database.execute("SELECT hash, size, dictionary FROM raw_blobs")
        if str(h) in before and used is not None
    }
    assert recompressed  # the newest of them, each now smaller
    assert sum(recompressed.values()) <= dictionary.RECOMPRESS_BYTES < sum(before.values())
    assert len(recompressed) < len(before)  # the older ones, beyond the budget, are left as they were
    for session_id in vault.vaulted_sessions(database):
        for kept in vault.kept_versions(database, session_id)[-1].files:
            assert vault.read_blob(database, kept.hash) == Path(kept.fingerprint.path).read_bytes()


def test_a_session_new_to_the_store_whose_copies_the_vault_holds_keeps_its_generations(
    tmp_path: Path, database: Database
) -> None:
    """``keep_first`` (a session the store has no row of) writes a first generation only when
    the vault holds no version of the session either; when it does, it keeps them as ``keep``."""
    root = tmp_path / "cline" / "sessions"
    session = Synthetic(synthetic_id(1), seed=1)
    session.grow()
    session.write(root)
    ingester(database).ingest(SessionLocation.in_root(root, session.session_id))
    (first,) = vault.kept_versions(database, session.session_id)
    messages = next(f for f in first.files if f.name.endswith(".messages.json"))
    other = tmp_path / "other.json"
    other.write_bytes(b'{"not": "an extension of it"}')
    info = other.stat()
    raw = RawFile(
        messages.name, other.read_bytes(), SourceFile(str(other), info.st_size, info.st_mtime_ns, info.st_ino)
    )
    with database.transaction() as connection:
        vault.keep_first(connection, session.session_id, [raw], now="2026-12-02T12:00:00.000Z")
    versions = vault.kept_versions(database, session.session_id)
    assert [v.number for v in versions] == [1, 2]
    assert [vault.read_blob(database, f.hash) for f in versions[-1].files] == [other.read_bytes()]
