"""2. Warm start: ``postrun capture --once`` over a stored, unchanged history.

The figure is the whole-process wall time (fork to exit), median of ``runs`` runs after
one untimed run. The proof that no transcript is read is one more run under ``strace``
counting successful opens of ``*.messages.json`` in every thread; without strace, an audit
hook loaded through ``sitecustomize`` counts Python's ``open`` events instead.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.proc import Finished, count_opens, postrun_command, run, strace_available
from bench.stats import median

TRANSCRIPT = r"\.messages\.json$"
_SUMMARY = re.compile(r"summary: (?P<present>\d+) sessions?, (?P<ingested>\d+) ingested, (?P<updated>\d+) updated")
_AUDIT_HOOK = """
import atexit, os, re, sys
_pattern = re.compile(os.environ["BENCH_OPEN_PATTERN"])
_count = [0]
def _hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)) and _pattern.search(os.fsdecode(args[0])):
        _count[0] += 1
sys.addaudithook(_hook)
atexit.register(lambda: open(os.environ["BENCH_OPEN_COUNT"], "w").write(str(_count[0])))
"""


@dataclass(frozen=True, slots=True)
class WarmResult:
    sessions: int
    wall_seconds: tuple[float, ...]
    cpu_seconds: tuple[float, ...]
    max_rss_bytes: int
    transcripts_read: int
    proof: str  # how transcripts_read was counted

    @property
    def median_wall(self) -> float:
        return median(self.wall_seconds)

    @property
    def median_cpu(self) -> float:
        return median(self.cpu_seconds)


def measure_warm(env: Mapping[str, str], *, runs: int, scratch: Path, transcript: str = TRANSCRIPT) -> WarmResult:
    """``transcript``: a pattern of the paths whose opens count as transcript reads."""
    command = [*postrun_command(), "capture", "--once"]
    _checked(run(command, env))  # untimed: the first run after the ingest
    timed = [_checked(run(command, env)) for _ in range(runs)]
    sessions = int(_summary(timed[0])["present"])
    transcripts, proof = _count_transcript_opens(command, env, scratch, transcript)
    return WarmResult(
        sessions=sessions,
        wall_seconds=tuple(f.wall_seconds for f in timed),
        cpu_seconds=tuple(f.cpu_seconds for f in timed),
        max_rss_bytes=max(f.max_rss_bytes for f in timed),
        transcripts_read=transcripts,
        proof=proof,
    )


def _summary(finished: Finished) -> re.Match[str]:
    found = _SUMMARY.search(finished.stdout)
    if found is None:
        raise RuntimeError(f"postrun capture --once: no summary line: {finished.stdout!r} {finished.stderr[-2000:]}")
    return found


def _checked(finished: Finished) -> Finished:
    summary = _summary(finished)
    if finished.returncode != 0 or int(summary["ingested"]) or int(summary["updated"]):
        raise RuntimeError(f"warm start is not warm: exit {finished.returncode}: {finished.stdout.strip()}")
    return finished


def _count_transcript_opens(
    command: list[str], env: Mapping[str, str], scratch: Path, transcript: str
) -> tuple[int, str]:
    if strace_available():
        scratch.mkdir(parents=True, exist_ok=True)
        _, count = count_opens(command, env, scratch / "warm.strace", transcript)
        return count, f"strace -f -e trace=open,openat,openat2 (successful opens of {transcript!r}, all threads)"
    hook_dir = scratch / "audit"
    hook_dir.mkdir(parents=True, exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(textwrap.dedent(_AUDIT_HOOK))
    counted = scratch / "audit.count"
    audited = dict(env) | {
        "PYTHONPATH": str(hook_dir),
        "BENCH_OPEN_PATTERN": transcript,
        "BENCH_OPEN_COUNT": str(counted),
    }
    _checked(run(command, audited))
    return int(counted.read_text()), "Python audit hook on 'open' events (sitecustomize)"
