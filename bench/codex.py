"""``python -m bench.codex``: a synthetic Codex history ingested cold, against agentsview; its work floor and store.

The history is ``bench/codex_history.py``'s (rollouts under ``sessions/YYYY/MM/DD/``, sub-agents'
rollouts beside their parent's, a fifth of the sessions resumed); the figures are
``bench/agentcold.py``'s: one ``postrun ingest --agent codex`` of the sessions folder, with
``--peer`` one ``agentsview sync`` of a copy (``CODEX_SESSIONS_DIR``), the work floor and the
store's size per MB of rollouts. Then ``bench/appends.py``'s: a live ``postrun capture`` over
one open rollout of ``--large-mb`` (50 MB), each line of further tool calls appended and
timed alone (target: at most 3x the line's parse plus 20 ms).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import agentcold, sections
from bench.appends import Appends, time_appends
from bench.codex_history import open_codex_session, write_codex_history
from bench.proc import Capture, isolated_env
from bench.stats import median
from postrun.agents import registry


def log(message: str) -> None:
    print(f"bench.codex: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.codex", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200, help="sessions in the history (default 200)")
    parser.add_argument("--turns", type=float, default=3, help="mean turns per session (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--peer", action="store_true", help="also time agentsview 0.46.1's sync")
    parser.add_argument("--large-mb", type=float, default=50, help="the open rollout appended to (default 50)")
    parser.add_argument("--appends", type=int, default=8, help="lines appended to it, each timed (default 8)")
    parser.add_argument("--workdir", type=Path, help="an empty folder to work in (default: a temp dir, removed)")
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if "codex" not in registry.KINDS:
        log("Postrun does not read Codex at this commit (no codex adapter registered)")
        return 3
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postrun-bench-codex-"))
    try:
        root = workdir / "history" / "sessions"
        log(f"writing {args.sessions} sessions (mean {args.turns:g} turns)")
        totals = write_codex_history(root, seed=args.seed, sessions=args.sessions, mean_turns=args.turns)
        home = workdir / "home"
        extra = {"POSTRUN_AGENTS": "codex", "POSTRUN_CODEX_DIR": str(root)}
        env = isolated_env(home, db=workdir / "store" / "postrun.db", cline_dir=home / "no-cline", extra=extra)
        cold = agentcold.measure(
            "codex",
            root,
            env,
            sessions=totals.sessions,
            source_bytes=totals.bytes,
            peer_variable="CODEX_SESSIONS_DIR" if args.peer else None,
            workdir=workdir,
        )
        appended = measure_append(workdir, seed=args.seed, large_mb=args.large_mb, count=args.appends)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    command = (
        f"python -m bench.codex --sessions {args.sessions} --turns {args.turns:g} --seed {args.seed}"
        f" --large-mb {args.large_mb:g} --appends {args.appends}"
    )
    body = [
        f"A synthetic Codex history of {totals.sessions} sessions ({totals.threads} threads, sub-agents included),"
        f" {totals.tool_calls:,} tool calls, {totals.bytes / 2**20:.0f} MB of rollouts.",
        "",
        "| Figure | Result | Target | |",
        "| --- | --- | --- | --- |",
        *agentcold.rows(cold),
        appended.row("rollout"),
    ]
    lines = sections.stamped(command + (" --peer" if args.peer else ""), body)
    print("\n".join(lines))
    if not args.no_write:
        sections.write(args.output, "codex", lines)
    return 0


def measure_append(workdir: Path, *, seed: int, large_mb: float, count: int) -> Appends:
    """A live capture over one open rollout of ``large_mb``; each appended line's ingest, as it logs it."""
    root = workdir / "large" / "sessions"
    session = open_codex_session(root, seed=seed, target_bytes=int(large_mb * 2**20))
    home = workdir / "large-home"
    db = workdir / "large" / "postrun.db"
    extra = {"POSTRUN_AGENTS": "codex", "POSTRUN_CODEX_DIR": str(root)}
    capture = Capture(isolated_env(home, db=db, cline_dir=home / "no-cline", extra=extra), workdir / "large.log")
    lead = session.lead

    def one_call() -> list[bytes]:
        # One more tool call of the thread's last turn, as Codex writes it: the call, the
        # response's usage, the item, the output the model gets; each line appended alone.
        session.tool_call(lead, "bench-open-turn")
        pending, lead.pending = lead.pending, []
        return pending

    try:
        capture.wait_stored(db, [session.session_id], timeout=600)
        appended = time_appends(capture, "codex", lead.path, one_call, count)
    finally:
        capture.stop()
    log(f"append: {median(appended.took_ms):.0f} ms median per line (parse {appended.parse_ms:.3f} ms)")
    return appended


if __name__ == "__main__":
    raise SystemExit(main())
