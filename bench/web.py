"""The review app's speed and memory over the bench's history: ``python -m bench.web``.

Builds the history (10,000 one-turn sessions by default, the same generator and seed as
``python -m bench``) plus one open session of at least 5,000 steps, ingests it with the real
``postrun ingest``, starts the real ``postrun serve`` and times complete responses over
loopback (status line to last byte, one connection per request): the sessions page under
filters, search, and the 5,000-step session page. RSS is the server's, from /proc, after
every request was made (and its peak, VmHWM).
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil

from bench.history import MESSAGES_PER_TURN, open_session, write_history
from bench.noise import CpuMark, others_share
from bench.proc import isolated_env, postrun_command, run
from bench.stats import median

MB = 2**20
TARGETS_MS = {"sessions": 100.0, "search": 200.0, "session": 500.0}
TARGET_RSS_MB = 90.0
SESSION_FILTERS = (
    "/",
    "/?page=2",
    "/?page=40",
    "/?failed=1",
    "/?flagged=1",
    "/?state=ended",
    "/?verdict=unreviewed",
    "/?verdict=looks_good",
    "/?workspace=/home/dev/work/project",
    "/?from=2026-03-01&to=2026-04-30",
    "/?q=stream+read",
    "/?q=zzzz-no-such-title",
    "/?failed=1&state=ended&from=2026-01-01&to=2026-05-31&verdict=unreviewed",
)
SEARCHES = ("/search?q=error", "/search?q=import+os", "/search?q=test&type=command", "/search?q=return&failed=1")
_LISTENING = re.compile(r"http://127\.0\.0\.1:(\d+)/")


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def timed_get(port: int, path: str, cookie: str) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        started = time.perf_counter()
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
        response = connection.getresponse()
        response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status}")
        return elapsed
    finally:
        connection.close()


def sign_in(port: int, env: dict[str, str]) -> str:
    url = subprocess.run([*postrun_command(), "open", "--print"], env=env, capture_output=True, text=True, check=True)
    path = url.stdout.strip().split(f":{port}", 1)[1]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
    response = connection.getresponse()
    response.read()
    cookie = response.getheader("set-cookie") or ""
    connection.close()
    return cookie.split(";", 1)[0]


def rss_mb(pid: int) -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.web", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions in the history (default 10,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--big-steps", type=int, default=5_000, help="steps of the big open session")
    parser.add_argument("--rounds", type=int, default=5, help="times each request is repeated")
    parser.add_argument("--workdir", type=Path, help="work here (kept); default a temp dir, removed")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postrun-bench-web-"))
    try:
        return _measure(args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _measure(args: argparse.Namespace, workdir: Path) -> int:
    root = workdir / "cline" / "sessions"
    db = workdir / "store" / "postrun.db"
    env = isolated_env(workdir / "home", db=db, cline_dir=root)
    print(f"generating {args.sessions:,} sessions in {root}", flush=True)
    write_history(root, seed=args.seed, sessions=args.sessions, mean_turns=1)
    big = open_session(args.seed * 1000 + 1, target_bytes=1)
    while len(big.messages) < args.big_steps:  # about one step per message
        big.add_turn()
    big.write(root, ended=False)
    print(f"ingesting (plus a {big.turns}-turn open session, {big.turns * MESSAGES_PER_TURN:,} messages)", flush=True)
    ingested = run([*postrun_command(), "ingest", str(root)], env, timeout=3600)
    if ingested.returncode != 0:
        raise SystemExit(f"ingest failed: {ingested.stderr[-2000:]}")
    big_steps = int(re.search(rf"session {big.session_id}: (\d+) steps", ingested.stdout).group(1))  # type: ignore[union-attr]
    command = [*postrun_command(), "serve", "--port", "0"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        port = int(_LISTENING.search(server.stdout.readline()).group(1))  # type: ignore[union-attr]
        cookie = sign_in(port, env)
        groups = {
            "sessions": list(SESSION_FILTERS),
            "search": list(SEARCHES),
            "session": [f"/s/{urllib.parse.quote(big.session_id)}"],
        }
        timings: dict[str, list[float]] = {name: [] for name in groups}
        served = psutil.Process(server.pid)
        start, served_before = CpuMark.now(), _cpu(served)
        for name, paths in groups.items():
            for path in paths:
                timed_get(port, path, cookie)  # warm: first use of each query plan and page cache
                timings[name] += [timed_get(port, path, cookie) for _ in range(args.rounds)]
        end, served_after = CpuMark.now(), _cpu(served)
        # The server is the bench's own work, though not reaped yet: take it out of "others".
        capacity = (end.wall - start.wall) * (os.cpu_count() or 1)
        others = max(0.0, others_share(start, end) - (served_after - served_before) / capacity)
        rss, peak = rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()
    _report(args, timings, rss, peak, big_steps, others)
    return 0


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _report(
    args: argparse.Namespace, timings: dict[str, list[float]], rss: float, peak: float, big_steps: int, others: float
) -> None:
    labels = {
        "sessions": f"Sessions page, {len(SESSION_FILTERS)} filter combinations",
        "search": f"Search, {len(SEARCHES)} queries",
        "session": f"Session page, {big_steps:,} steps (bodies load on demand)",
    }
    print(f"\n`python -m bench.web --sessions {args.sessions} --rounds {args.rounds}` on {platform.node()},"
          f" {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, {os.cpu_count()} cores;"
          f" other processes used {others:.0%} of the machine's CPU while the requests ran\n")  # fmt: skip
    print("| Request | median | p95 | target | |")
    print("| --- | --- | --- | --- | --- |")
    for name, values in timings.items():
        verdict = "pass" if p95(values) <= TARGETS_MS[name] else "**miss**"
        print(f"| {labels[name]} | {median(values):.0f} ms | {p95(values):.0f} ms | p95 ≤ {TARGETS_MS[name]:.0f} ms"
              f" | {verdict} |")  # fmt: skip
    verdict = "pass" if rss <= TARGET_RSS_MB else "**miss**"
    print(f"| `postrun serve` RSS after all requests | {rss:.0f} MB (peak {peak:.0f} MB) | | ≤ {TARGET_RSS_MB:.0f} MB"
          f" | {verdict} |")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
