"""``python -m bench.mirror``: the team mirror's first-push throughput and its lag under busy load.

It starts its own PostgreSQL (``initdb`` + ``pg_ctl`` on a loopback port, as the tests do),
fills a store from the bench history with ``postrun capture --once``, then:

1. **first push**: ``postrun mirror push`` of the whole store into the empty database, timed
   from fork to exit; throughput is the steps it reports divided by that wall time;
2. **lag under busy load**: ``postrun capture`` with the mirror on while ``--busy-sessions``
   open sessions each gain a message every ``--period`` seconds. A sampler reads
   ``postrun.sessions`` every 50 ms; each session version it sees gives one lag,
   ``mirrored_at - updated_at`` (the mirror's write minus the store's commit, one clock).

The section between its markers in BENCHMARKS.md is rewritten; the rest of the file is not.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import sections
from bench.history import dumps, open_session, write_history
from bench.machine import Machine, describe
from bench.proc import isolated_env, postrun_command, run
from tests.support.postgres import find_bin_dir, running_server

REPO = Path(__file__).resolve().parent.parent
_PUSHED = re.compile(r"pushed (?P<sessions>[\d,]+) sessions? \((?P<steps>[\d,]+) steps?\)")


@dataclass(frozen=True)
class Figures:
    sessions: int
    steps: int
    push_seconds: float
    busy_sessions: int
    busy_seconds: float
    period: float
    lags: tuple[float, ...]
    log_errors: int

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.push_seconds

    def lag(self, share: float) -> float:
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def log(message: str) -> None:
    print(f"bench.mirror: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mirror", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000, help="history sessions in the store (default 2000)")
    parser.add_argument("--turns", type=float, default=1, help="mean turns per history session (default 1)")
    parser.add_argument("--busy-sessions", type=int, default=50, help="sessions changing at once (default 50)")
    parser.add_argument("--period", type=float, default=0.2, help="each changes this often, seconds (default 0.2)")
    parser.add_argument("--busy-seconds", type=float, default=60, help="the busy window (default 60)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    bin_dir = find_bin_dir()
    if bin_dir is None:
        log("PostgreSQL is not installed (initdb not found): apt-get install postgresql")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="postrun-bench-mirror-"))
    try:
        with running_server(bin_dir) as server:
            figures = measure(server, workdir, args)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    command = sections.command_line("python -m bench.mirror", sys.argv[1:] if argv is None else argv)
    lines = section(figures, command.strip(), describe(REPO))
    print("\n".join(lines))
    if not args.no_write:
        sections.write(args.output, "mirror", lines)
        log(f"wrote {args.output}")
    return 0


def measure(server, workdir: Path, args: argparse.Namespace) -> Figures:  # type: ignore[no-untyped-def]
    database = server.create_database()
    root = workdir / "cline" / "sessions"
    env = isolated_env(
        workdir / "home",
        db=workdir / "store" / "postrun.db",
        cline_dir=root,
        extra={
            "POSTRUN_MIRROR_URL": server.url(database),
            "PGPASSFILE": str(server.write_passfile(workdir / "pgpass")),
            "POSTRUN_DEBOUNCE_SECONDS": "0.1",
        },
    )
    log(f"history: {args.sessions} sessions of {args.turns:g} turns; capture --once")
    write_history(root, seed=args.seed, sessions=args.sessions, mean_turns=args.turns)
    filled = run([*postrun_command(), "capture", "--once"], env)
    assert filled.returncode == 0, filled.stderr[-2000:]

    log("first push")
    pushed = run([*postrun_command(), "mirror", "push"], env)
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    found = _PUSHED.search(pushed.stdout)
    assert found is not None, pushed.stdout
    sessions, steps = (int(found[name].replace(",", "")) for name in ("sessions", "steps"))

    log(f"busy: {args.busy_sessions} sessions, one message each every {args.period:g} s, {args.busy_seconds:g} s")
    lags, errors = busy_lag(server, database, root, env, workdir, args)
    return Figures(
        sessions, steps, pushed.wall_seconds, args.busy_sessions, args.busy_seconds, args.period, lags, errors
    )


def busy_lag(server, database: str, root: Path, env: dict[str, str], workdir: Path, args):  # type: ignore[no-untyped-def]
    import subprocess

    writers = [open_session(args.seed * 1000 + k, target_bytes=200_000) for k in range(args.busy_sessions)]
    shown = {w.session_id: 26 for w in writers}
    for writer in writers:
        writer.write(root, ended=False)
        _rewrite(root, writer, shown[writer.session_id])
    log_path = workdir / "capture.log"
    with log_path.open("w") as log_file:
        capture = subprocess.Popen([*postrun_command(), "capture"], env=env, stderr=log_file, stdout=subprocess.DEVNULL)
    try:
        _wait_for(log_path, re.compile(r"mirror .*: caught up"), timeout=600)
        seen: dict[tuple[str, object], float] = {}
        stop = threading.Event()

        def sample() -> None:
            with server.admin(database) as connection:
                while not stop.is_set():
                    for session_id, updated_at, lag in connection.execute(
                        "SELECT session_id, updated_at, extract(epoch FROM mirrored_at - updated_at)"
                        " FROM postrun.sessions"
                    ):
                        seen.setdefault((session_id, updated_at), float(lag))
                    stop.wait(0.05)

        baseline = set(_versions(server, database))
        sampler = threading.Thread(target=sample, name="sampler")
        sampler.start()
        deadline = time.monotonic() + args.busy_seconds
        next_tick = time.monotonic()
        while time.monotonic() < deadline:
            for writer in writers:
                if shown[writer.session_id] < len(writer.messages):
                    shown[writer.session_id] += 1
                    _rewrite(root, writer, shown[writer.session_id])
            next_tick += args.period
            time.sleep(max(0.0, next_tick - time.monotonic()))
        time.sleep(5)  # let the last changes arrive before the sampler stops
        stop.set()
        sampler.join()
    finally:
        capture.terminate()
        capture.wait(30)
    errors = sum(1 for line in log_path.read_text().splitlines() if " ERROR " in line)
    return tuple(lag for key, lag in seen.items() if key not in baseline), errors


def _versions(server, database: str) -> list[tuple[str, object]]:  # type: ignore[no-untyped-def]
    with server.admin(database) as connection:
        return [tuple(row) for row in connection.execute("SELECT session_id, updated_at FROM postrun.sessions")]


def _rewrite(root: Path, writer, limit: int) -> None:  # type: ignore[no-untyped-def]
    path = root / writer.session_id / f"{writer.session_id}.messages.json"
    path.write_bytes(dumps(writer.messages_document(limit)))


def _wait_for(path: Path, pattern: re.Pattern[str], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not pattern.search(path.read_text(errors="replace")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {pattern.pattern!r} in {path} after {timeout:g} s")
        time.sleep(0.1)


def section(figures: Figures, command: str, machine: Machine) -> list[str]:
    lags = figures.lags
    body = [
        "Against a PostgreSQL the bench starts on loopback (fsync off).",
        "",
        "| Figure | Target | Result |",
        "| --- | --- | --- |",
        f"| First push of the whole store | — | {figures.sessions:,} sessions, {figures.steps:,} steps in"
        f" {figures.push_seconds:.1f} s: **{figures.steps_per_second:,.0f} steps/s** |",
        f"| Lag, store commit to PostgreSQL, {figures.busy_sessions} sessions each changing every"
        f" {figures.period:g} s for {figures.busy_seconds:g} s | p95 ≤ 5 s |"
        + (
            f" **p95 {figures.lag(0.95):.2f} s** (median {statistics.median(lags):.2f} s, max {max(lags):.2f} s,"
            f" {len(lags):,} versions sampled; {figures.log_errors} errors logged) |"
            if lags
            else " no version sampled |"
        ),
        "",
        "Lag is `mirrored_at - updated_at` of each session version the sampler saw (every 50 ms), so it",
        "leaves out the debounce before a change is stored. First-push throughput includes connecting,",
        "creating the schema and reading the store.",
    ]
    return sections.stamped(command, body, machine)


if __name__ == "__main__":
    raise SystemExit(main())
