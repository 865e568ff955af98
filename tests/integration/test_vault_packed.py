"""Raw copies packed (hashed, compressed) in ingest processes: kept as the writer keeps its own,
with the vault's dictionary once the store has one, and never kept undecodable."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from postrun.agents.cline import list_sessions
from postrun.errors import SourceError
from postrun.ingest import batches
from postrun.ingest.batches import ingest_all
from postrun.ingest.ingester import Ingester, IngestOutcome
from postrun.ingest.pool import Processes
from postrun.records import PackedFile, RawFile, SourceFile
from postrun.store import dictionary, vault
from postrun.store.db import Database
from tests.reliability.kit import Synthetic, differences, read_records, synthetic_id, write_synthetic
from tests.support.processes import mapping_processes

MAX_BYTES = 64 * 2**20


def copies_read_back(database: Database) -> int:
    """How many copies the vault keeps, each checked against the file it was read from."""
    kept = 0
    for session_id in vault.vaulted_sessions(database):
        for copy in vault.kept_versions(database, session_id)[-1].files:
            assert vault.read_blob(database, copy.hash) == Path(copy.fingerprint.path).read_bytes()
            kept += 1
    return kept


def test_copies_packed_in_a_process_are_kept_as_in_line_with_the_vaults_dictionary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dictionary, "BUILD_AFTER_BYTES", 60_000)  # the writer cuts it; processes only read it
    monkeypatch.setattr(dictionary, "CONTENT_BYTES", 40_000)
    monkeypatch.setattr(batches, "BATCH_SECONDS", 0.0)  # each session committed: the process sees the dictionary
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 12, grows=30)
    sessions = list_sessions(root).sessions
    with Database.open(tmp_path / "apart.db") as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(1, from_sessions=2))
        results = list(ingest_all(ingester, sessions))
        assert all(isinstance(result, IngestOutcome) for result in results)
        assert copies_read_back(database) == 2 * len(sessions)  # messages and manifest, each
        packed_with_it = database.execute("SELECT count(*) FROM raw_blobs WHERE dictionary IS NOT NULL").get
        assert int(packed_with_it) >= 4
    assert mapping_processes() == []
    with Database.open(tmp_path / "in-line.db") as database:
        list(ingest_all(Ingester(database, max_bytes=MAX_BYTES), sessions))
    assert differences(read_records(tmp_path / "apart.db"), read_records(tmp_path / "in-line.db")) == []


def test_the_transaction_that_cuts_the_dictionary_commits_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingest processes read the vault's dictionary only once it is committed: the batch that
    cut it commits then, however long it could still run, so that the copies packed after it
    use it."""
    monkeypatch.setattr(dictionary, "BUILD_AFTER_BYTES", 60_000)
    monkeypatch.setattr(dictionary, "CONTENT_BYTES", 40_000)
    monkeypatch.setattr(batches, "BATCH_SECONDS", 600.0)
    monkeypatch.setattr(batches, "TAIL_SHARE", 0.0)  # nor a small last one committed apart
    root = tmp_path / "cline" / "sessions"
    write_synthetic(root, 12, grows=30)
    sessions = list_sessions(root).sessions
    with Database.open(tmp_path / "store.db") as database:
        ingester = Ingester(database, max_bytes=MAX_BYTES, mapping_processes=Processes(1, from_sessions=2))
        batched = list(batches.committed_batches(ingester, sessions))
        assert len(batched) == 2  # the batch that cut it, then the rest
        first = [sessions[index].session_id for index, _ in batched[0]]  # in the order stored

        def kept(session_ids: list[str]) -> int:
            marks = ", ".join("?" * len(session_ids))
            query = f"SELECT coalesce(sum(size), 0) FROM raw_files WHERE session_id IN ({marks})"
            return int(database.execute(query, session_ids).get)

        # The dictionary was cut storing the first batch's last session, once the vault held
        # enough copies before it; the batch committed right after that session.
        assert kept(first[:-2]) < dictionary.BUILD_AFTER_BYTES <= kept(first[:-1])
        (cut_from,) = [orjson.loads(row[0]) for row in database.execute("SELECT sessions FROM raw_dictionaries")]
        assert set(cut_from) <= set(first[:-1])
    assert mapping_processes() == []


def stored_with_a_dictionary(root: Path, database: Database, monkeypatch: pytest.MonkeyPatch) -> str:
    """Eight sessions stored, the vault's dictionary cut from them; the first session it was cut from."""
    monkeypatch.setattr(dictionary, "BUILD_AFTER_BYTES", 60_000)
    monkeypatch.setattr(dictionary, "CONTENT_BYTES", 40_000)
    write_synthetic(root, 8, grows=30)
    list(ingest_all(Ingester(database, max_bytes=MAX_BYTES), list_sessions(root).sessions))
    (cut_from,) = [orjson.loads(row[0]) for row in database.execute("SELECT sessions FROM raw_dictionaries")]
    return str(cut_from[0])


def packed_copy(database: Database, root: Path, session_id: str) -> PackedFile:
    """The session's messages file packed by an ingest process, with the vault's dictionary."""
    path = root / session_id / f"{session_id}.messages.json"
    info = path.stat()
    fingerprint = SourceFile(str(path), info.st_size, info.st_mtime_ns, info.st_ino)
    with Database.open_reader(database.path) as reader:
        packed = vault.pack(
            reader.connection, RawFile(f"sessions/{session_id}/{path.name}", path.read_bytes(), fingerprint)
        )
    assert packed.dictionary is not None
    return packed


def test_a_copy_packed_with_a_dictionary_forget_removed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``forget`` removed the dictionary after a process packed a copy with it: nothing could
    decompress that copy, so it is refused (that session is not stored) rather than kept."""
    root = tmp_path / "cline" / "sessions"
    with Database.open(tmp_path / "store.db") as database:
        cut_from = stored_with_a_dictionary(root, database, monkeypatch)
        session_id = synthetic_id(9)
        later = Synthetic(session_id, seed=9)
        later.grow()
        later.write(root)
        packed = packed_copy(database, root, session_id)
        with database.transaction() as connection:
            vault.forget_raw(connection, cut_from)
        assert database.execute("SELECT count(*) FROM raw_dictionaries").get == 0
        for keep in (vault.keep, vault.keep_first):  # a session stored before, and one stored now for the first time
            refused = pytest.raises(SourceError, match="packed with a vault dictionary that `forget` removed")
            with refused, database.transaction() as connection:
                keep(connection, session_id, [packed], now="2026-12-02T12:00:00.000Z")
            assert vault.kept_versions(database, session_id) == []
            assert database.execute("SELECT count(*) FROM raw_blobs WHERE hash = ?", (packed.hash,)).get == 0
        copies_read_back(database)


def test_a_copy_packed_with_a_removed_dictionary_is_kept_when_the_vault_holds_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused only when it would be the vault's only copy of those bytes: when it holds them
    already (another session's file, the same bytes), that copy is what it keeps."""
    root = tmp_path / "cline" / "sessions"
    with Database.open(tmp_path / "store.db") as database:
        cut_from = stored_with_a_dictionary(root, database, monkeypatch)
        kept_by = next(s.session_id for s in list_sessions(root).sessions if s.session_id != cut_from)
        packed = packed_copy(database, root, kept_by)
        with database.transaction() as connection:
            vault.forget_raw(connection, cut_from)  # the others' copies recompressed without it
        with database.transaction() as connection:
            assert vault.keep_first(connection, "another-session", [packed], now="2026-12-02T12:00:00.000Z") == 1
        (copy,) = vault.kept_versions(database, "another-session")[-1].files
        assert vault.read_blob(database, copy.hash) == Path(copy.fingerprint.path).read_bytes()
