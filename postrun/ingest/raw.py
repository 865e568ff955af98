"""The vault for people: ``reingest`` (records rebuilt from the raw copies) and ``raw``
(a session's files handed back as Cline wrote them)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from postrun.errors import PostrunError, StoreError, UsageError
from postrun.ingest.ingester import Ingester, IngestFailure, IngestOutcome
from postrun.ingest.kept import no_raw_copies
from postrun.paths import ensure_private_dir
from postrun.store import vault
from postrun.store.db import Database
from postrun.store.query import resolve_session_id

_FILE_MODE = 0o600


@dataclass(frozen=True)
class ReingestReport:
    outcomes: list[IngestOutcome] = field(default_factory=list)
    failures: list[IngestFailure] = field(default_factory=list)


def reingest(
    db: Path,
    references: Sequence[str],
    *,
    max_bytes: int,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> ReingestReport:
    """Rebuild the records of the sessions ``references`` name (ids or unique prefixes; none:
    every session the vault keeps) from their newest raw copies.

    One session's failure is reported and the others go on; a store error stops the run.
    """
    report = ReingestReport()
    with Database.open(db, create=False) as database:
        if references:
            session_ids = [_vaulted_id(database, reference) for reference in references]
        else:
            session_ids = vault.vaulted_sessions(database)
        ingester = Ingester(database, max_bytes=max_bytes)
        on_progress(0, len(session_ids))
        for done, session_id in enumerate(session_ids, start=1):
            try:
                report.outcomes.append(ingester.reingest(session_id))
            except StoreError as exc:
                report.failures.append(IngestFailure(session_id, exc))
                break
            except PostrunError as exc:
                report.failures.append(IngestFailure(session_id, exc))
            on_progress(done, len(session_ids))
    return report


def _vaulted_id(database: Database, reference: str) -> str:
    """A stored session's id, or an id the vault alone still keeps (its records were deleted)."""
    if reference in vault.vaulted_sessions(database):
        return reference
    return resolve_session_id(database, reference)


@dataclass(frozen=True, slots=True)
class RawWritten:
    folder: Path
    version: vault.KeptVersion
    versions: int  # how many the vault keeps


def write_raw(db: Path, reference: str, target: Path, *, version: int | None, protected: Iterable[Path]) -> RawWritten:
    """Write the session's kept files (the newest version, or ``version``) into the new folder
    ``target``, laid out as in the agent's data folder (``sessions/<id>/…``).

    Refuses (UsageError) a ``target`` inside any of the ``protected`` folders (the agent's own
    data folders: Postrun never writes there) and an existing folder that is not empty.
    """
    target = target.absolute()
    with Database.open_reader(db) as database:
        session_id = _vaulted_id(database, reference)
        versions = vault.kept_versions(database, session_id)
        if not versions:
            raise no_raw_copies(session_id)
        if version is None:
            chosen = versions[-1]
        elif 1 <= version <= len(versions):
            chosen = versions[version - 1]
        else:
            raise UsageError("--version", f"session {session_id} keeps versions 1 to {len(versions)}, not {version}")
        folders = {Path(f.fingerprint.path).parents[len(Path(f.name).parts) - 1] for f in chosen.files}
        _check_target(target, [*protected, *folders])
        contents = [(f.name, vault.read_blob(database, f.hash)) for f in chosen.files]
    for name, data in contents:
        _write_new(target, name, data)
    return RawWritten(target, chosen, len(versions))


def _check_target(target: Path, protected: Iterable[Path]) -> None:
    resolved = target.resolve()
    for folder in protected:
        if resolved.is_relative_to(folder.resolve()):
            raise UsageError(str(target), f"is inside the agent's data folder {folder} (Postrun never writes there)")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(str(target), "already exists and is not an empty folder")


def _write_new(target: Path, name: str, data: bytes) -> None:
    path = target.joinpath(*name.split("/"))
    try:
        ensure_private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, _FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise PostrunError(str(path), f"cannot write ({exc.strerror or exc})") from None
