"""Figure 7: what flags and redaction cost, as a share of ingest time, in process.

A sample of the history's sessions is ingested into a scratch store with the real
``Ingester`` (flags included); the same sessions are mapped again and only
``flag_session`` is timed, then their stored envelopes are redacted. The share is
flag time over ingest time; the secret scan is also given per MB of text scanned.
"""

from __future__ import annotations

import gc
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import sections
from bench.machine import describe
from postrun.agents.cline import SessionLocation, approval_snapshot, map_session, read_session
from postrun.ingest.ingester import Ingester
from postrun.recall.bounds import text_size
from postrun.review.apply import flag_session
from postrun.review.redact import Redactor
from postrun.store.db import Database
from postrun.store.query import load_envelope

REPO = Path(__file__).resolve().parent.parent
MB = 2**20
MAX_BYTES = 512 * MB


@dataclass(frozen=True)
class ReviewResult:
    sessions: int
    steps: int
    text_mb: float  # the steps' text the rules scan
    ingest_seconds: float  # read, map, flag, validate, store
    flag_seconds: float  # flag_session alone
    redact_seconds: float  # Redactor over the stored envelopes

    @property
    def share(self) -> float:
        return self.flag_seconds / self.ingest_seconds if self.ingest_seconds else 0.0

    @property
    def flag_ms_per_mb(self) -> float:
        return self.flag_seconds * 1000 / self.text_mb if self.text_mb else 0.0

    @property
    def redact_mb_per_second(self) -> float:
        return self.text_mb / self.redact_seconds if self.redact_seconds else 0.0


def measure_review(session_folders: Sequence[Path], *, sample: int) -> ReviewResult:
    """Time ingest, flagging and redaction of every ``len // sample``-th session folder."""
    step = max(1, len(session_folders) // max(sample, 1))
    chosen = list(session_folders)[::step][:sample]
    locations = [SessionLocation.in_root(folder.parent, folder.name) for folder in chosen]
    with (
        tempfile.TemporaryDirectory(prefix="postrun-bench-review-") as scratch,
        Database.open(Path(scratch) / "postrun.db") as database,
    ):
        ingester = Ingester(database, max_bytes=MAX_BYTES)
        gc.collect()
        started = time.perf_counter()
        for location in locations:
            ingester.ingest(location)
        ingest_seconds = time.perf_counter() - started

        flag_seconds = 0.0
        steps = 0
        text = 0
        for location in locations:
            files = read_session(location, max_bytes=MAX_BYTES)
            approvals = approval_snapshot(location.data_dir, files.client_source, max_bytes=MAX_BYTES)
            mapped, _ = map_session(files, approvals)
            steps += len(mapped.steps)
            text += sum(_text_chars(row.record) for row in mapped.steps)
            started = time.perf_counter()
            flag_session(mapped)
            flag_seconds += time.perf_counter() - started

        envelopes = [load_envelope(database, location.session_id) for location in locations]
    started = time.perf_counter()
    for envelope in envelopes:
        Redactor(home="/home/dev").envelope(envelope)
    redact_seconds = time.perf_counter() - started
    return ReviewResult(len(locations), steps, text / MB, ingest_seconds, flag_seconds, redact_seconds)


def _text_chars(step: dict[str, Any]) -> int:
    """The characters of every string a step's payload holds (raw included) and of its error:
    the text the flags and the redactor look at."""
    error = step.get("error")
    return text_size(step["payload"]) + (len(error["message"]) if error else 0)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.review``: the figure alone, on a fresh history of ``--sessions``."""
    import argparse

    from bench.history import write_history

    parser = argparse.ArgumentParser(prog="python -m bench.review", description=__doc__)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="postrun-bench-review-history-") as folder:
        root = Path(folder) / "sessions"
        write_history(root, seed=args.seed, sessions=args.sessions, mean_turns=1)
        result = measure_review(sorted(path for path in root.iterdir() if path.is_dir()), sample=args.sessions)
    lines = sections.stamped(
        f"python -m bench.review --sessions {args.sessions} --seed {args.seed}", table(result), describe(REPO)
    )
    print("\n".join(lines))
    if not args.no_write:
        sections.write(args.output, "review", lines)
    return 0


def table(result: ReviewResult) -> list[str]:
    """The section's figures (in-process wall times: their shares are what matters)."""
    return [
        "| Figure | Measured |",
        "|---|---|",
        f"| Flags, share of in-process ingest ({result.sessions:,} sessions, {result.steps:,} steps,"
        f" {result.text_mb:.0f} MB of step text) | {result.flag_seconds:.2f} s of {result.ingest_seconds:.2f} s:"
        f" **{result.share:.0%}** ({result.flag_seconds / max(result.steps, 1) * 1e6:.0f} µs per step,"
        f" {result.flag_ms_per_mb:.0f} ms per MB of text scanned) |",
        f"| Redaction (export, `show --redact`) | {result.redact_mb_per_second:.0f} MB of step text per second"
        f" ({result.redact_seconds:.2f} s for the {result.sessions:,} sessions) |",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
