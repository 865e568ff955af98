"""The mirror suites' PostgreSQL: one real server for the whole run, one database per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.postgres import PostgresServer, find_bin_dir, running_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = "PostgreSQL is not installed (initdb not found); .ci/run installs Debian's postgresql"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with running_server(bin_dir) as server:
        yield server


@pytest.fixture
def server(postgres: PostgresServer) -> Iterator[PostgresServer]:
    """The shared server, started again at the end if a test stopped it."""
    yield postgres
    if not postgres.running():
        postgres.start()


@dataclass(frozen=True)
class Mirror:
    server: PostgresServer
    database: str
    url: str
    passfile: Path


@pytest.fixture
def mirror(server: PostgresServer, tmp_path: Path) -> Mirror:
    """A fresh, empty database and a password file that lets Postrun's role in."""
    database = server.create_database()
    passfile = server.write_passfile(tmp_path / "pgpass")
    return Mirror(server, database, server.url(database), passfile)


@pytest.fixture
def mirror_env(env: dict[str, str], mirror: Mirror) -> dict[str, str]:
    """The isolated environment with the mirror configured (the password only in PGPASSFILE)."""
    return env | {"POSTRUN_MIRROR_URL": mirror.url, "PGPASSFILE": str(mirror.passfile)}
