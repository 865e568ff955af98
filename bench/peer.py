"""``--peer agentsview``: agentsview 0.46.1's ``agentsview sync`` over the same Cline files, in the same run.

agentsview (a Go program) is installed from PyPI into the bench's own interpreter when
asked (``pip install agentsview==0.46.1``: a wheel holding its binary) and run as that
binary, so no Python wrapper start-up is counted. Each cold-ingest slice is first copied
into the peer's own sessions folder (agentsview never sees the bench's history), then
one ``agentsview sync`` runs with:

- ``HOME`` and the XDG folders in the bench's temp dir, so no other agent's default
  folder exists and no user configuration is read;
- ``AGENTSVIEW_DATA_DIR`` (its database and config) in the same place, kept across the
  slices as Postrun's store is, so each sync adds one slice to a growing database;
- ``CLINE_DIR`` at the copy; ``AGENTSVIEW_NO_DAEMON=1`` (a one-shot sync in this
  process, no background server or port); update check and telemetry off.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.history import WrittenSession
from bench.proc import Finished, run

AGENTSVIEW = "agentsview"
AGENTSVIEW_VERSION = "0.46.1"
PEERS = (AGENTSVIEW,)
_SYNCED = re.compile(r"Sync complete: (?P<sessions>\d+) sessions synced")


@dataclass(frozen=True, slots=True)
class PeerRun:
    sessions: int
    wall_seconds: float
    cpu_seconds: float
    max_rss_bytes: int


def ensure_agentsview() -> Path:
    """The agentsview binary of the bench's interpreter, installing the pinned version first if needed."""
    try:
        installed = importlib.metadata.version(AGENTSVIEW)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed != AGENTSVIEW_VERSION:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", f"{AGENTSVIEW}=={AGENTSVIEW_VERSION}"], check=True
        )
        importlib.invalidate_caches()
    spec = importlib.util.find_spec(AGENTSVIEW)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{AGENTSVIEW} {AGENTSVIEW_VERSION} is not importable after pip install")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / AGENTSVIEW
    mode = binary.stat().st_mode
    if not mode & stat.S_IXUSR:  # as its own wrapper does before exec
        binary.chmod(mode | stat.S_IXUSR)
    return binary


def peer_env(workdir: Path, env: Mapping[str, str], folders: Mapping[str, str]) -> dict[str, str]:
    """agentsview's environment: ``env`` without Postrun's, XDG's or agentsview's own variables,
    its HOME, XDG folders and data dir under ``workdir``, the agent folders ``folders`` names
    (``CLINE_DIR``, ``CLAUDE_PROJECTS_DIR``, ``CODEX_SESSIONS_DIR``), no daemon, browser,
    update check or telemetry."""
    home = workdir / "home"
    for name in ("config", "data", "state", "cache"):
        (home / f".{name}").mkdir(parents=True, exist_ok=True)
    kept = {k: v for k, v in env.items() if not k.startswith(("POSTRUN_", "XDG_", "AGENTSVIEW_")) and k != "HOME"}
    return kept | {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".data"),
        "XDG_STATE_HOME": str(home / ".state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "AGENTSVIEW_DATA_DIR": str(workdir / "data"),
        **folders,
        "AGENTSVIEW_NO_DAEMON": "1",
        "AGENTSVIEW_NO_BROWSER": "1",
        "AGENTSVIEW_DISABLE_UPDATE_CHECK": "1",
        "AGENTSVIEW_TELEMETRY_ENABLED": "0",
        "DO_NOT_TRACK": "1",
    }


class Agentsview:
    """One agentsview data dir and sessions copy that the cold-ingest slices are added to."""

    def __init__(self, binary: Path, workdir: Path, env: Mapping[str, str]) -> None:
        self.binary = binary
        self.sessions_root = workdir / "cline" / "sessions"
        self.sessions_root.mkdir(parents=True)
        self.env = peer_env(workdir, env, {"CLINE_DIR": str(self.sessions_root)})

    def sync(self, part: Sequence[WrittenSession]) -> PeerRun:
        """Copy ``part`` into the peer's sessions folder, then time one ``agentsview sync``."""
        for session in part:
            folder = session.messages_path.parent
            shutil.copytree(folder, self.sessions_root / folder.name, copy_function=shutil.copy2)
        os.sync()  # the copy's writeback is not the sync's cost
        finished = run([str(self.binary), "sync"], self.env)
        _check(finished, len(part))
        return PeerRun(
            sessions=len(part),
            wall_seconds=finished.wall_seconds,
            cpu_seconds=finished.cpu_seconds,
            max_rss_bytes=finished.max_rss_bytes,
        )


def _check(finished: Finished, expected: int) -> None:
    found = _SYNCED.search(finished.stdout + finished.stderr)
    synced = int(found["sessions"]) if found else None
    if finished.returncode != 0 or synced != expected:
        raise RuntimeError(
            f"agentsview sync: exit {finished.returncode}, {synced} of {expected} sessions synced:"
            f" {(finished.stdout + finished.stderr)[-2000:]}"
        )
