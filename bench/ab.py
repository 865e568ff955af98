"""``python -m bench.ab REV REV... [--shape large] [--rounds 9]``: builds compared on one cold ingest.

A change's effect on a cold ingest is often a few percent, and the main bench's figures move by
a tenth between runs; runs of the builds taken in turn share the machine's state. Each revision
is checked out (``git worktree``, detached) in a temp dir and compiled; the shape's history is
generated as ``python -m bench`` generates it (same shapes and seed), and its first cold-ingest
slice is ingested into a fresh store by each build in turn, ``--rounds`` times, by this
interpreter (its installed dependencies) with the revision's ``postrun`` first on the path.
Prints each build's median and fastest wall time and its largest peak RSS (its ingest processes
added in).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.proc import isolated_env, run
from bench.run import QUICK, SHAPES

MB = 2**20


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n\n")[0])
    parser.add_argument("revisions", nargs="+", help="git revisions to compare (HEAD, a commit, a branch)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="large")
    parser.add_argument("--rounds", type=int, default=9, help="runs of each build, taken in turn")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    with tempfile.TemporaryDirectory(prefix="postrun-ab-") as scratch:
        work = Path(scratch)
        builds = {
            revision: _checkout(revision, work / f"build{number}") for number, revision in enumerate(args.revisions)
        }
        root = work / "cline" / "sessions"
        history = shape.write(root, seed=args.seed)
        part = history.written[0 :: QUICK.cold_runs]
        folders = [str(session.messages_path.parent) for session in part]
        print(f"{shape.describe()}: first slice, {len(part)} sessions, {sum(s.bytes for s in part) / MB:.0f} MB")
        walls: dict[str, list[float]] = {revision: [] for revision in builds}
        rss: dict[str, int] = dict.fromkeys(builds, 0)
        try:
            for _ in range(args.rounds):
                for revision, checkout in builds.items():
                    home = work / "home"
                    shutil.rmtree(home, ignore_errors=True)
                    env = isolated_env(home, db=home / "store" / "postrun.db", cline_dir=root)
                    env["PYTHONPATH"] = str(checkout)
                    # -P: the current folder does not go first on the path, the checkout does.
                    finished = run([sys.executable, "-P", "-m", "postrun", "ingest", "--agent", "cline", *folders], env)
                    if finished.returncode != 0:
                        raise SystemExit(
                            f"{revision}: postrun ingest exited {finished.returncode}: {finished.stderr[-500:]}"
                        )
                    walls[revision].append(finished.wall_seconds)
                    rss[revision] = max(rss[revision], finished.tree_rss_bytes)
        finally:
            for checkout in builds.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(checkout)], check=False)
    for revision, times in walls.items():
        print(
            f"{revision}: median {statistics.median(times):.3f} s, fastest {min(times):.3f} s"
            f" ({len(times)} runs), peak RSS {rss[revision] / MB:.0f} MB"
        )
    return 0


def _checkout(revision: str, where: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--quiet", "--detach", str(where), revision], check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(where / "postrun")], check=True)
    return where


if __name__ == "__main__":
    sys.exit(main())
