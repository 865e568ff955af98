"""The vault's budgets on the bench history: raw copies' size, their cost to cold ingest and
warm start, and ``reingest --all`` against a cold ingest.

    python -m bench.vault                     # 1,000 one-turn sessions (122 MB), 5 runs: ~4 minutes
    python -m bench.vault --sessions 500 --turns 2 --runs 3

Each figure compares two stores built from the same history in the same run: one with
``keep_raw`` on (the default), one with it off. Cold ingest, warm start (``capture --once``)
and ``reingest --all`` are the real ``postrun`` process; runs alternate on and off so that
load from other processes falls on both alike. The figures are the median CPU time (user +
system, from ``wait4``) of each: on a shared machine wall time swings far more than what is
measured (the wall times are listed too). The dictionary figure
compresses every source file alone with zstd at the vault's level, as without the vault's
dictionary, and with a dictionary zstd trains on a sample of them, in this process.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import zstandard

from bench import sections
from bench.history import write_history
from bench.machine import describe
from bench.proc import Finished, isolated_env, postrun_command, run
from bench.stats import median
from postrun.store.dictionary import LEVEL as ZSTD_LEVEL

REPO = Path(__file__).resolve().parent.parent
RAW_BUDGET = 0.15  # MB of raw copies per MB of Cline source
COLD_BUDGET = 0.15  # added to cold ingest time
DICTIONARY_BYTES = 112 * 1024


@dataclass(frozen=True, slots=True)
class VaultFigures:
    sessions: int
    source_bytes: int
    raw_bytes: int  # compressed blobs in the store, and the dictionary
    cold_on: tuple[Finished, ...]
    cold_off: tuple[Finished, ...]
    warm_on: tuple[Finished, ...]
    warm_off: tuple[Finished, ...]
    reingest: tuple[Finished, ...]
    plain_bytes: int  # every file compressed alone
    dictionary_bytes: int  # the same with a zstd-trained dictionary, the dictionary included

    @property
    def raw_per_source(self) -> float:
        return self.raw_bytes / self.source_bytes

    @property
    def cold_added(self) -> float:
        return cpu(self.cold_on) / cpu(self.cold_off) - 1


def cpu(runs: Sequence[Finished]) -> float:
    return median([r.cpu_seconds for r in runs])


def walls(runs: Sequence[Finished]) -> str:
    return ", ".join(f"{r.wall_seconds:.2f}" for r in runs)


def _ok(finished: Finished, what: str) -> Finished:
    if finished.returncode != 0:
        raise SystemExit(f"{what} failed ({finished.returncode}): {finished.stderr[-2000:]}")
    return finished


def measure(workdir: Path, *, sessions: int, turns: float, seed: int, runs: int) -> VaultFigures:
    root = workdir / "cline" / "sessions"
    totals = write_history(root, seed=seed, sessions=sessions, mean_turns=turns)
    files = sorted(root.glob("*/*.json"))
    source_bytes = sum(path.stat().st_size for path in files)
    folders = sorted(str(path) for path in root.iterdir())
    cold: dict[bool, list[Finished]] = {True: [], False: []}
    warm: dict[bool, list[Finished]] = {True: [], False: []}
    reingest: list[Finished] = []
    kept = workdir / "kept.db"
    for index in range(runs):
        for keep_raw in (True, False) if index % 2 == 0 else (False, True):
            db = workdir / f"store-{keep_raw}-{index}.db"
            env = isolated_env(
                workdir / f"home-{keep_raw}-{index}",
                db=db,
                cline_dir=root,
                extra={"POSTRUN_KEEP_RAW": str(keep_raw).lower()},
            )
            cold[keep_raw].append(_ok(run([*postrun_command(), "ingest", *folders], env), "ingest"))
            capture = [*postrun_command(), "capture", "--once"]
            _ok(run(capture, env), "capture --once")  # untimed: the first start after the ingest
            warm[keep_raw].append(_ok(run(capture, env), "capture --once"))
            if keep_raw:
                reingest.append(_ok(run([*postrun_command(), "reingest", "--all"], env), "reingest"))
                if not kept.exists():
                    shutil.copy(db, kept)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
    connection = apsw.Connection(str(kept), flags=apsw.SQLITE_OPEN_READONLY)
    raw_bytes = int(connection.execute("SELECT coalesce(sum(length(data)), 0) FROM raw_blobs").get)
    raw_bytes += int(connection.execute("SELECT coalesce(sum(length(data)), 0) FROM raw_dictionaries").get)
    connection.close()
    plain, with_dictionary = _dictionary_sizes(files, seed)
    return VaultFigures(
        sessions=totals.sessions,
        source_bytes=source_bytes,
        raw_bytes=raw_bytes,
        cold_on=tuple(cold[True]),
        cold_off=tuple(cold[False]),
        warm_on=tuple(warm[True]),
        warm_off=tuple(warm[False]),
        reingest=tuple(reingest),
        plain_bytes=plain,
        dictionary_bytes=with_dictionary,
    )


def _dictionary_sizes(files: Sequence[Path], seed: int) -> tuple[int, int]:
    contents: list[bytes | bytearray | memoryview] = [path.read_bytes() for path in files]
    sample = random.Random(seed).sample(contents, min(len(contents), 1000))
    dictionary = zstandard.train_dictionary(DICTIONARY_BYTES, sample)
    plain = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    trained = zstandard.ZstdCompressor(level=ZSTD_LEVEL, dict_data=dictionary)
    return (
        sum(len(plain.compress(data)) for data in contents),
        sum(len(trained.compress(data)) for data in contents) + len(dictionary.as_bytes()),
    )


def report(figures: VaultFigures, args: argparse.Namespace) -> list[str]:
    def verdict(passed: bool) -> str:
        return "met" if passed else "MISSED"

    mb = 2**20
    cold_on, cold_off = cpu(figures.cold_on), cpu(figures.cold_off)
    warm_on, warm_off = cpu(figures.warm_on), cpu(figures.warm_off)
    reingest = cpu(figures.reingest)
    return sections.stamped(
        f"python -m bench.vault --sessions {args.sessions} --turns {args.turns:g} --seed {args.seed}"
        f" --runs {args.runs}",
        [
            "| Figure | Target | Measured | |",
            "|---|---|---|---|",
            f"| Raw copies per MB of Cline source | ≤ {RAW_BUDGET} MB | {figures.raw_per_source:.3f} MB"
            f" ({figures.raw_bytes / mb:.1f} MB for {figures.source_bytes / mb:.1f} MB,"
            f" {figures.sessions} sessions) | {verdict(figures.raw_per_source <= RAW_BUDGET)} |",
            f"| Added to cold ingest (CPU) | ≤ {COLD_BUDGET:.0%} | {figures.cold_added:+.1%} ({cold_on:.2f} s on,"
            f" {cold_off:.2f} s off) | {verdict(figures.cold_added <= COLD_BUDGET)} |",
            f"| Warm start, `capture --once` (CPU) | nothing measurable | {warm_on:.2f} s on, {warm_off:.2f} s off"
            f" ({warm_on / warm_off - 1:+.1%}) | {verdict(warm_on <= warm_off * 1.05)} |",
            f"| `reingest --all` (CPU) | ≤ cold ingest ({cold_on:.2f} s) | {reingest:.2f} s |"
            f" {verdict(reingest <= cold_on)} |",
            f"| Dictionary of earlier copies (the vault's) | pays? | {figures.raw_bytes / mb:.1f} MB stored;"
            f" files alone {figures.plain_bytes / mb:.1f} MB; zstd-trained {DICTIONARY_BYTES // 1024} KB dictionary"
            f" {figures.dictionary_bytes / mb:.1f} MB | used |",
            "",
            f"Medians of {args.runs} runs each (on and off alternating). Wall times, in seconds: cold on"
            f" {walls(figures.cold_on)}; cold off {walls(figures.cold_off)}; warm on {walls(figures.warm_on)};"
            f" warm off {walls(figures.warm_off)}; reingest {walls(figures.reingest)}.",
        ],
        describe(REPO),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vault", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=float, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, help="an empty folder to work in (default: a temp dir, removed)")
    parser.add_argument("--output", type=Path, default=sections.BENCHMARKS, help="the file whose section to update")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="postrun-bench-vault-"))
    try:
        figures = measure(workdir, sessions=args.sessions, turns=args.turns, seed=args.seed, runs=args.runs)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    lines = report(figures, args)
    print("\n".join(lines))
    if not args.no_write:
        sections.write(args.output, "vault", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
