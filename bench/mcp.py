"""Recall's speed (``postrun mcp``): server start and ``search`` over the bench's store.

Measured from the outside, as an MCP client sees it, with the SDK's own client over stdio:
*start* is the wall time from spawning ``postrun mcp`` to its answer to ``initialize`` (the
interpreter, the imports, the handshake); *search* is the round trip of one ``tools/call``
(the query, redaction and JSON over the pipes). ``python -m bench`` runs it over its cold
ingest's store; ``python -m bench.mcp`` builds a store of its own first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench import sections
from bench.history import WORKSPACE, write_history
from bench.noise import CpuMark, others_share
from bench.proc import isolated_env, postrun_command, run
from bench.stats import median, percentile

SEARCH_TARGET_MS = 200.0
START_TARGET_SECONDS = 1.0
# Common words (in most steps of the history), a pair, a miss, and the filters an agent passes.
SEARCHES: tuple[dict[str, Any], ...] = (
    {"query": "error"},
    {"query": "stream buffer"},
    {"query": "import config", "outcome": "failed"},
    {"query": "commit", "agent": "cline", "workspace": WORKSPACE},
    {"query": "handler", "since": "2026-05-01"},
    {"query": "zzzz-no-such-word"},
    {"query": "session request", "limit": 50},
)


@dataclass(frozen=True)
class RecallResult:
    sessions: int
    start_seconds: list[float]
    start_cpu_seconds: list[float]  # the server's own CPU time (user + system) until it answered
    sdk_cpu_seconds: list[float]  # `python -c "import mcp.server"`: the SDK's own import, a floor
    search_ms: list[float]
    others_cpu: float

    @property
    def start_median(self) -> float:
        return median(self.start_seconds)

    @property
    def search_p95(self) -> float:
        return percentile(self.search_ms, 0.95)


def measure_recall(env: Mapping[str, str], *, sessions: int, starts: int = 5, rounds: int = 5) -> RecallResult:
    """``starts`` server starts, then every search of ``SEARCHES`` ``rounds`` times on one server."""
    mark = CpuMark.now()
    start_seconds, start_cpu, search_ms = anyio.run(_measure, dict(env), starts, rounds)
    sdk = [run([sys.executable, "-c", "import mcp.server"], env).cpu_seconds for _ in range(starts)]
    return RecallResult(sessions, start_seconds, start_cpu, sdk, search_ms, others_share(mark, CpuMark.now()))


async def _measure(env: dict[str, str], starts: int, rounds: int) -> tuple[list[float], list[float], list[float]]:
    program, *more = postrun_command()
    params = StdioServerParameters(command=program, args=[*more, "mcp"], env=env)
    start_seconds: list[float] = []
    start_cpu: list[float] = []
    search_ms: list[float] = []
    with Path(os.devnull).open("w") as quiet:
        for attempt in range(starts):
            started = time.perf_counter()
            async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                start_seconds.append(time.perf_counter() - started)
                start_cpu.append(_server_cpu())
                if attempt < starts - 1:
                    continue
                for arguments in SEARCHES:  # warm: each query's first plan and pages
                    await _search(session, arguments)
                for _ in range(rounds):
                    for arguments in SEARCHES:
                        began = time.perf_counter()
                        await _search(session, arguments)
                        search_ms.append((time.perf_counter() - began) * 1000)
    return start_seconds, start_cpu, search_ms


def _server_cpu() -> float:
    """The CPU time of the server (this process's one child): what its start costs whatever the load."""
    (server,) = psutil.Process().children()
    times = server.cpu_times()
    return float(times.user + times.system)


async def _search(session: ClientSession, arguments: dict[str, Any]) -> None:
    result = await session.call_tool("search", arguments)
    if getattr(result, "is_error", False):
        raise RuntimeError(f"search {arguments}: {result}")


def table(result: RecallResult) -> list[str]:
    """The section's figures (``python -m bench`` writes it from its phase 7 too)."""
    return [
        f"Other processes used {result.others_cpu:.0%} of the machine's CPU meanwhile.",
        "",
        "| Figure | measured | target | |",
        "| --- | --- | --- | --- |",
        *(
            f"| {figure} | {measured} | {target} | {'pass' if passed else '**miss**'} |"
            for figure, measured, target, passed in rows(result)
        ),
    ]


def rows(result: RecallResult) -> list[tuple[str, str, str, bool]]:
    """(figure, measured, target, passed) for the report."""
    return [
        (
            f"`postrun mcp` search over {result.sessions:,} sessions ({len(SEARCHES)} queries, SDK client, stdio)",
            f"median {median(result.search_ms):.0f} ms, p95 {result.search_p95:.0f} ms",
            f"p95 ≤ {SEARCH_TARGET_MS:.0f} ms",
            result.search_p95 <= SEARCH_TARGET_MS,
        ),
        (
            "`postrun mcp` start (spawn to the answer to `initialize`)",
            f"median {result.start_median:.2f} s, max {max(result.start_seconds):.2f} s;"
            f" {median(result.start_cpu_seconds):.2f} s of CPU, of which importing the MCP SDK alone"
            f" {median(result.sdk_cpu_seconds):.2f} s",
            f"≤ {START_TARGET_SECONDS:g} s",
            result.start_median <= START_TARGET_SECONDS,
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions in the history (default 10,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=5, help="times each search is repeated")
    parser.add_argument("--starts", type=int, default=5, help="server starts timed")
    parser.add_argument("--workdir", type=Path, help="work here (kept; a store already there is used)")
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postrun-bench-mcp-"))
    try:
        root = workdir / "cline" / "sessions"
        db = workdir / "store" / "postrun.db"
        env = isolated_env(workdir / "home", db=db, cline_dir=root)
        if not db.exists():
            print(f"generating {args.sessions:,} sessions in {root}", file=sys.stderr, flush=True)
            write_history(root, seed=args.seed, sessions=args.sessions, mean_turns=1)
            print("ingesting", file=sys.stderr, flush=True)
            ingested = run([*postrun_command(), "ingest", str(root)], env, timeout=3600)
            if ingested.returncode != 0:
                raise SystemExit(f"ingest failed: {ingested.stderr[-2000:]}")
        result = measure_recall(env, sessions=args.sessions, starts=args.starts, rounds=args.rounds)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    command = f"python -m bench.mcp --sessions {args.sessions} --rounds {args.rounds} --starts {args.starts}"
    lines = sections.stamped(command, table(result))
    print("\n".join(lines))
    if not args.no_write:
        sections.write(args.output, "mcp", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
