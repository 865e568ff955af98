"""The machine and software a run measured: what a reader needs to compare figures."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import apsw
import psutil

import postrun


@dataclass(frozen=True, slots=True)
class Machine:
    cpu: str
    cores: int
    ram_gb: float
    os: str
    python: str
    sqlite: str
    postrun: str
    commit: str
    date: str

    def lines(self) -> list[str]:
        return [
            f"- CPU: {self.cpu}, {self.cores} cores",
            f"- RAM: {self.ram_gb:.1f} GB",
            f"- OS: {self.os}",
            f"- Python: {self.python}; SQLite {self.sqlite} (apsw)",
            f"- Postrun: {self.postrun} at commit {self.commit}",
            f"- Date: {self.date}",
        ]


def describe(repo: Path) -> Machine:
    return Machine(
        cpu=_cpu_model(),
        cores=os.cpu_count() or 0,
        ram_gb=psutil.virtual_memory().total / 2**30,
        os=_os_name(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        sqlite=apsw.sqlite_lib_version(),
        postrun=postrun.__version__,
        commit=_commit(repo),
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _os_name() -> str:
    release = Path("/etc/os-release")
    pretty = ""
    if release.exists():
        for line in release.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip('"') + ", "
    return f"{pretty}{platform.system()} {platform.release()} ({platform.machine()})"


def _commit(repo: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "postrun"], capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' (postrun/ modified)' if dirty else ''}"
