"""The review app's speed and memory over the bench's history: ``python -m bench.web``.

Builds the history (10,000 one-turn sessions by default, the same generator and seed as
``python -m bench``) plus one open session of at least 5,000 steps, ingests it with the real
``postrun ingest``, adds a review mix (``bench.review_mix``: flagged sessions of two more agent
kinds, verdicts on a tenth of all), starts the real ``postrun serve`` and times complete
responses over loopback (status line to last byte, one connection per request): the sessions
page (the review inbox) under filters, search (long queries too), the 5,000-step session page
and one of its turns opened, and the activity and files pages over their widest range. RSS is
the server's, from /proc, after every request was made (and its peak, VmHWM); then 20 loads
of the 5,000-step page at once, and how soon the server's RSS is back under its bound.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

from bench import sections
from bench.history import MESSAGES_PER_TURN, open_session, write_history
from bench.noise import CpuMark, others_share
from bench.proc import isolated_env, postrun_command, run
from bench.review_mix import add_review_mix
from bench.stats import median
from postrun.store.activity import EDITS_PAGE, file_edits
from postrun.store.browse import PAGE_SIZE
from postrun.store.db import Database

MB = 2**20
TARGETS_MS = {"sessions": 100.0, "search": 200.0, "session": 500.0, "turn": 500.0, "range": 1000.0}
TARGET_RSS_MB = 90.0
PARALLEL_LOADS = 20
TARGET_RSS_AFTER_PARALLEL_MB = 120.0
RSS_SETTLE_SECONDS = 10.0
SESSION_FILTERS = (
    "/",
    "/?order=newest",
    "/?page=2",
    "/?needs=1",
    "/?agent=codex",
    "/?flag=dangerous_command",
    "/?flag=any&agent=claude-code&verdict=unreviewed",
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
# The index's most common terms, the worst case for a long query: each is a pass over most steps.
_COMMON = ("open", "value", "test", "response", "build", "source", "read", "stream", "def", "class")
SEARCHES = (
    "/search?q=error",
    "/search?q=import+os",
    "/search?q=test&type=command",
    "/search?q=return&failed=1",
    "/search?q=" + "+".join(_COMMON * 5),  # 50 words
    "/search?q=" + "+".join(f"{word}{i}" for i in range(20) for word in _COMMON),  # 200 words
)
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


def parallel_loads(port: int, path: str, cookie: str, count: int) -> float:
    """``count`` GETs of ``path`` at once, each on its own connection; the slowest, in ms."""
    times: list[float] = []
    threads = [threading.Thread(target=lambda: times.append(timed_get(port, path, cookie))) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(times) != count:
        raise RuntimeError(f"GET {path}: {count - len(times)} of {count} parallel loads failed")
    return max(times)


def settle(pid: int, bound_mb: float, seconds: float) -> tuple[float, float | None]:
    """The server's RSS after up to ``seconds``, and how long it took to get under ``bound_mb``
    (None: it did not)."""
    started = time.monotonic()
    while True:
        rss, _ = rss_mb(pid)
        waited = time.monotonic() - started
        if rss <= bound_mb:
            return rss, waited
        if waited >= seconds:
            return rss, None
        time.sleep(0.1)


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
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postrun-bench-web-"))
    report = io.StringIO()  # what ``_report`` prints: the section's figures
    try:
        with contextlib.redirect_stdout(report):
            code = _measure(args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    command = f"python -m bench.web --sessions {args.sessions} --big-steps {args.big_steps} --rounds {args.rounds}"
    lines = sections.stamped(command, report.getvalue().strip("\n").splitlines())
    print("\n".join(lines))
    if not args.no_write:
        sections.write(args.output, "web", lines)
    return code


def _measure(args: argparse.Namespace, workdir: Path) -> int:
    root = workdir / "cline" / "sessions"
    db = workdir / "store" / "postrun.db"
    env = isolated_env(workdir / "home", db=db, cline_dir=root)
    print(f"generating {args.sessions:,} sessions in {root}", file=sys.stderr, flush=True)
    write_history(root, seed=args.seed, sessions=args.sessions, mean_turns=1)
    big = open_session(args.seed * 1000 + 1, target_bytes=1)
    while len(big.messages) < args.big_steps:  # about one step per message
        big.add_turn()
    big.write(root, ended=False)
    print(
        f"ingesting (plus a {big.turns}-turn open session, {big.turns * MESSAGES_PER_TURN:,} messages)",
        file=sys.stderr,
        flush=True,
    )
    ingested = run([*postrun_command(), "ingest", str(root)], env, timeout=3600)
    if ingested.returncode != 0:
        raise SystemExit(f"ingest failed: {ingested.stderr[-2000:]}")
    # ingest's line counts with thousands separators ("5,000 steps")
    found = re.search(rf"session {big.session_id}: ([\d,]+) steps", ingested.stdout)
    if found is None:
        raise SystemExit(f"ingest did not name the open session {big.session_id}: {ingested.stdout[-2000:]}")
    big_steps = int(found.group(1).replace(",", ""))
    reviewed = add_review_mix(db, seed=args.seed)
    print(f"added the review mix: {reviewed:,} sessions with a verdict", file=sys.stderr, flush=True)
    with Database.open_reader(db) as database:
        total = int(database.execute("SELECT count(*) FROM sessions").get)
        edits = file_edits(database, "/home/dev/work/project", since_utc="0000", per_page=1).total
    command = [*postrun_command(), "serve", "--port", "0"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        port = int(_LISTENING.search(server.stdout.readline()).group(1))  # type: ignore[union-attr]
        cookie = sign_in(port, env)
        today = datetime.now(UTC).date()
        widest = f"from={today - timedelta(days=3649)}&to={today}"
        groups = {
            # A deep page: the 40th, or the last of a smaller store (one past it is a 400).
            "sessions": [*SESSION_FILTERS, f"/?page={max(1, min(40, -(-total // PAGE_SIZE)))}"],
            "search": list(SEARCHES),
            "session": [f"/s/{urllib.parse.quote(big.session_id)}"],
            "turn": [f"/s/{urllib.parse.quote(big.session_id)}/turn?id=turn:{big.turns // 2}"],
            "range": [
                f"/activity?{widest}",
                "/files?workspace=/home/dev/work/project&days=3650",
                # The third page, or the last of a smaller store.
                f"/files?workspace=/home/dev/work/project&days=3650&page={max(1, min(3, -(-edits // EDITS_PAGE)))}",
            ],
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
        slowest = parallel_loads(port, groups["session"][0], cookie, PARALLEL_LOADS)
        _, parallel_peak = rss_mb(server.pid)
        settled, settled_in = settle(server.pid, TARGET_RSS_AFTER_PARALLEL_MB, RSS_SETTLE_SECONDS)
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()
    _report(args, timings, rss, peak, big_steps, others)
    _report_parallel(slowest, parallel_peak, settled, settled_in)
    return 0


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _report(
    args: argparse.Namespace, timings: dict[str, list[float]], rss: float, peak: float, big_steps: int, others: float
) -> None:
    labels = {
        "sessions": f"Sessions page (the review inbox), {len(SESSION_FILTERS) + 1} filter combinations",
        "search": f"Search, {len(SEARCHES)} queries (two of 50 and 200 words)",
        "session": f"Session page, {big_steps:,} steps (bodies load on demand)",
        "turn": "One turn of that session, opened",
        "range": "Activity and files over their widest range (3,650 days), files pages 1 and 3 (or its last)",
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


def _report_parallel(slowest: float, peak: float, settled: float, settled_in: float | None) -> None:
    verdict = "pass" if settled_in is not None else "**miss**"
    when = f"{settled_in:.1f} s after" if settled_in is not None else f"not within {RSS_SETTLE_SECONDS:.0f} s of"
    print(f"| `postrun serve` RSS after {PARALLEL_LOADS} parallel loads of the session page (slowest {slowest:.0f} ms,"
          f" peak {peak:.0f} MB) | {settled:.0f} MB, under {TARGET_RSS_AFTER_PARALLEL_MB:.0f} MB {when} them | |"
          f" ≤ {TARGET_RSS_AFTER_PARALLEL_MB:.0f} MB within {RSS_SETTLE_SECONDS:.0f} s | {verdict} |")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
