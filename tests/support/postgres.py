"""A real PostgreSQL server for the mirror's tests: ``initdb`` + ``pg_ctl`` in a temp folder.

It listens on a free loopback port only (no Unix socket). ``initdb`` refuses root, so as root
the server runs as the unprivileged ``postgres`` system user Debian's package creates.
The superuser ``admin`` logs in without a password (for the tests' own checks and faults);
the role Postrun uses, ``postrun_app``, needs its password, which Postrun reads from the
password file the tests write (PGPASSFILE), as a real installation would.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

APP_USER = "postrun_app"
APP_PASSWORD = "app-secret-not-in-any-uri"
ADMIN = "admin"


def find_bin_dir() -> Path | None:
    """The newest installed server's binaries (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.base = Path(tempfile.mkdtemp(prefix="postrun-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user is not None:
            account = pwd.getpwnam(self.user)
            os.chown(self.base, account.pw_uid, account.pw_gid)
        self._databases = 0

    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(self.bin_dir / argv[0]), *argv[1:]],
            user=self.user,
            cwd=self.base,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "TZ": "UTC"},
        )
        if result.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({result.returncode}): {result.stderr}{self.server_log()[-2000:]}")
        return result

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", ADMIN, "-E", "UTF8", "--auth=trust", "--no-sync")
        (self.data / "pg_hba.conf").write_text(
            f"host all {ADMIN} 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = ''\n"
                # fsync off: a killed server keeps what it committed (the OS has it), and the tests
                # kill the server, never the machine. synchronous_commit stays on: off, a commit is
                # acknowledged before it is written, and a killed server loses it.
                "fsync = off\nfull_page_writes = off\nshared_buffers = 32MB\n"
                "max_connections = 40\nlog_min_messages = warning\n"
            )
        if self.user is not None:
            account = pwd.getpwnam(self.user)
            for path in (self.data / "pg_hba.conf", self.data / "postgresql.conf"):
                os.chown(path, account.pw_uid, account.pw_gid)
        self.start()
        with self.admin() as connection:
            connection.execute(f"CREATE ROLE {APP_USER} LOGIN PASSWORD '{APP_PASSWORD}'")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def destroy(self) -> None:
        with contextlib.suppress(RuntimeError):
            if self.running():
                self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def admin(self, database: str = "postgres") -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=ADMIN, dbname=database, autocommit=True, connect_timeout=10
        )

    def create_database(self) -> str:
        self._databases += 1
        name = f"mirror_{os.getpid()}_{self._databases}"
        with self.admin() as connection:
            connection.execute(f"CREATE DATABASE {name} OWNER {APP_USER}")
        return name

    def url(self, database: str) -> str:
        return f"postgresql://{APP_USER}@127.0.0.1:{self.port}/{database}"

    def write_passfile(self, path: Path, password: str = APP_PASSWORD) -> Path:
        path.write_text(f"127.0.0.1:{self.port}:*:{APP_USER}:{password}\n")
        path.chmod(0o600)
        return path

    def terminate_app_backends(self) -> int:
        with self.admin() as connection:
            rows = connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (APP_USER,)
            ).fetchall()
        return len(rows)


@contextlib.contextmanager
def running_server(bin_dir: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(bin_dir)
    try:
        server.init()
        yield server
    finally:
        server.destroy()
