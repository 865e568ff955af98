"""``python -m bench.claude``: Postrun on a synthetic Claude Code history (issue 22's targets).

Three figures, each against its target:

1. **Cold ingest** of a history of realistic shape (``bench/claude_history.py``: ~80% of the
   bytes metadata, sub-agents, persisted outputs, resumed sessions): ``postrun ingest --agent
   claude-code <projects>``, whole-process wall and CPU time; with ``--peer agentsview``, its
   ``sync`` of a copy of the same files (``CLAUDE_PROJECTS_DIR``), same isolation as the Cline
   bench's peer. Target: at most half agentsview's time. Beside it, the work floor of the same
   history and the store's size (``bench/agentcold.py``).
2. **One appended line in a 50 MB transcript**, live: a running ``postrun capture`` that has
   the session stored; each line appended is timed by capture's own ``in <ms> ms`` (read, map,
   flag, store) and set against the parse of that line alone (``orjson.loads``, median of many).
   Target: at most 3x the parse plus 20 ms.
3. **Warm start** over many unchanged, stored transcripts (short ones: the head of a generated
   session, one in five with a sub-agent; a warm start only fingerprints them):
   ``postrun capture --once``, median wall time of a few runs, and the transcripts it opened
   (``strace``). Target: 1 s, 0 reads.

Full size (``--full``): 1,000 sessions (over 1 GB) and 10,000 warm transcripts; the default
is a quick run of the same shape, small enough to run while the machine is shared.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import agentcold, sections
from bench.appends import Appends, time_appends
from bench.claude_history import open_claude_session, write_claude_history, write_small_sessions
from bench.peer import AGENTSVIEW, AGENTSVIEW_VERSION
from bench.proc import Capture, isolated_env, postrun_command, run
from bench.stats import median
from bench.warm import measure_warm

WARM_TARGET_SECONDS = 1.0
COLD_TARGET_SHARE = 0.5


@dataclass(frozen=True)
class Profile:
    name: str
    sessions: int
    turns: float
    warm_sessions: int
    large_mb: float
    appends: int


QUICK = Profile("quick", sessions=60, turns=3, warm_sessions=1_000, large_mb=50, appends=8)
FULL = dataclasses.replace(QUICK, name="full", sessions=1_000, turns=3.5, warm_sessions=10_000, appends=20)


@dataclass(frozen=True)
class Figures:
    profile: str
    history_bytes: int
    history_sessions: int
    history_subagents: int
    message_share: float
    cold: agentcold.AgentCold
    appends: Appends
    warm_sessions: int
    warm_wall: tuple[float, ...]
    warm_cpu: tuple[float, ...]
    warm_reads: int
    warm_proof: str


def log(message: str) -> None:
    print(f"bench.claude: {message}", file=sys.stderr, flush=True)


def _env(home: Path, db: Path, projects: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    extra = {"POSTRUN_AGENTS": "claude-code", "POSTRUN_CLAUDE_DIR": str(projects)}
    return isolated_env(home, db=db, cline_dir=home / "no-cline", extra=extra)


def measure_cold(workdir: Path, profile: Profile, seed: int, with_peer: bool) -> dict[str, object]:
    projects = workdir / "history" / "projects"
    log(f"writing {profile.sessions} sessions (mean {profile.turns} turns)")
    totals = write_claude_history(projects, seed=seed, sessions=profile.sessions, mean_turns=profile.turns)
    log(f"history: {totals.bytes / 2**20:.0f} MB, {totals.sessions} sessions, {totals.subagents} sub-agents")
    env = _env(workdir / "cold-home", workdir / "cold.db", projects)
    cold = agentcold.measure(
        "claude-code",
        projects,
        env,
        sessions=totals.sessions,
        source_bytes=totals.bytes,
        peer_variable="CLAUDE_PROJECTS_DIR" if with_peer else None,
        workdir=workdir,
    )
    log(f"cold ingest: {cold.cold.wall_seconds:.1f} s wall, {cold.cold.cpu_seconds:.1f} s CPU")
    return {
        "history_bytes": totals.bytes,
        "history_sessions": totals.sessions,
        "history_subagents": totals.subagents,
        "message_share": totals.message_bytes / totals.bytes,
        "cold": cold,
    }


def measure_append(workdir: Path, profile: Profile, seed: int) -> dict[str, object]:
    """A live capture over one open 50 MB transcript; each appended line's ingest, as it logs it."""
    projects = workdir / "large" / "projects"
    session = open_claude_session(projects, seed=seed, target_bytes=int(profile.large_mb * 2**20))
    env = _env(workdir / "large-home", workdir / "large.db", projects)
    capture = Capture(env, workdir / "large-capture.log")

    def one_call() -> list[bytes]:  # one tool call's lines; each is appended and timed alone
        session.call()
        pending = [line for chunk in session.buffer for line in chunk.splitlines(keepends=True)]
        session.buffer.clear()
        return pending

    try:
        capture.wait_stored(workdir / "large.db", [session.session_id], timeout=600)
        appended = time_appends(capture, "claude-code", session.path, one_call, profile.appends)
    finally:
        capture.stop()
    log(f"append: {median(appended.took_ms):.0f} ms median per line (parse {appended.parse_ms:.3f} ms)")
    return {"appends": appended}


def measure_warm_start(workdir: Path, profile: Profile, seed: int) -> dict[str, object]:
    projects = workdir / "warm" / "projects"
    totals = write_small_sessions(projects, seed=seed + 1, sessions=profile.warm_sessions)
    env = _env(workdir / "warm-home", workdir / "warm.db", projects)
    stored = run([*postrun_command(), "ingest", "--agent", "claude-code", str(projects)], env, timeout=7200)
    if stored.returncode != 0:
        raise RuntimeError(f"warm history ingest: exit {stored.returncode}: {stored.stderr[-2000:]}")
    warm = measure_warm(env, runs=5, scratch=workdir / "warm-scratch", transcript=r"\.jsonl$")
    log(f"warm start over {totals.sessions}: {warm.median_wall:.2f} s, {warm.transcripts_read} transcripts read")
    return {
        "warm_sessions": warm.sessions,
        "warm_wall": warm.wall_seconds,
        "warm_cpu": warm.cpu_seconds,
        "warm_reads": warm.transcripts_read,
        "warm_proof": warm.proof,
    }


def section(figures: Figures) -> list[str]:
    warm = median(figures.warm_wall)
    rows = [
        f"Profile {figures.profile}: a synthetic Claude Code history of {figures.history_sessions} sessions,"
        f" {figures.history_subagents} sub-agents, {figures.history_bytes / 2**20:.0f} MB"
        f" ({figures.message_share:.0%} of it `user`/`assistant` lines).",
        "",
        "| Figure | Result | Target | |",
        "| --- | --- | --- | --- |",
    ]
    rows += agentcold.rows(figures.cold)
    rows.append(figures.appends.row("transcript"))
    rows.append(
        f"| warm start, {figures.warm_sessions} unchanged transcripts | {warm:.2f} s wall"
        f" ({median(figures.warm_cpu):.2f} s CPU), {figures.warm_reads}"
        f" transcripts read ({figures.warm_proof}) | <= {WARM_TARGET_SECONDS:g} s, 0 reads |"
        f" {'met' if warm <= WARM_TARGET_SECONDS and figures.warm_reads == 0 else 'missed'} |"
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.claude", description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,000 sessions (over 1 GB), 10,000 warm transcripts")
    parser.add_argument("--sessions", type=int, help="sessions in the cold-ingest history")
    parser.add_argument("--warm-sessions", type=int, help="transcripts of the warm start")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--peer", action="store_true", help=f"also time {AGENTSVIEW} {AGENTSVIEW_VERSION}'s sync")
    parser.add_argument("--workdir", type=Path, help="an empty folder to work in (default: a temp dir, removed)")
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    profile = FULL if args.full else QUICK
    profile = dataclasses.replace(
        profile,
        sessions=args.sessions or profile.sessions,
        warm_sessions=args.warm_sessions or profile.warm_sessions,
    )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postrun-bench-claude-"))
    command = sections.command_line("python -m bench.claude", sys.argv[1:] if argv is None else argv)
    try:
        facts = measure_cold(workdir, profile, args.seed, args.peer)
        facts |= measure_append(workdir, profile, args.seed)
        facts |= measure_warm_start(workdir, profile, args.seed)
        figures = Figures(profile=profile.name, **facts)  # type: ignore[arg-type]
        lines = sections.stamped(command.strip(), section(figures))
        print("\n".join(lines))
        if not args.no_write:
            sections.write(args.output, "claude", lines)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
