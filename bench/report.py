"""The results table, and ``BENCHMARKS.md``.

The bench rewrites only the part of ``BENCHMARKS.md`` between the two markers below; the
rest of the file (what limits each figure, what was fixed) is written by people.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.cold import ColdResult
from bench.daemon import DaemonCost
from bench.floor import PARSER
from bench.instructions import Instructions
from bench.live import BusyLatency, LiveResult
from bench.machine import Machine
from bench.mcp import RecallResult
from bench.mcp import rows as recall_rows
from bench.overhead import Overhead
from bench.peer import AGENTSVIEW, AGENTSVIEW_VERSION
from bench.stats import median, percentile
from bench.storesize import StoreSize
from bench.trials import Trials
from bench.warm import WarmResult
from bench.workfloor import Startup

BEGIN = "<!-- bench:begin (written by `python -m bench`; edit outside these markers) -->"
END = "<!-- bench:end -->"
MB = 2**20

WORK_FLOOR_RATIO_TARGET = 1.3  # cold ingest's wall time over its work floor
CORES_USED_SHARE = 0.75  # "all the cores": CPU time over wall time at least this share of them
PEER_RATIO_TARGET = 0.5
COLD_RSS_TARGET = 120 * MB
STORE_MB_PER_MB_TARGET = 0.35  # records and search index
STORE_WITH_RAW_MB_PER_MB_TARGET = 0.5  # and the vault's raw copies
WARM_SECONDS_TARGET = 1.0
INCREMENTAL_RATIO_TARGET = 3.0
INCREMENTAL_ROWS_TARGET = 4
LATENCY_EVENTS_TARGET = 2.5
LATENCY_POLL_TARGET = 5.5
IDLE_CPU_TARGET = 0.1
IDLE_RSS_TARGET = 60 * MB
BUSY_CPU_TARGET = 0.4
BUSY_LATENCY_TARGET = 5.0
NOISY_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Row:
    figure: str
    measured: str
    reference: str  # the floor measured in the same run, and/or the target
    passed: bool | None  # None: no target


@dataclass(frozen=True)
class ShapeResult:
    """A history of one shape ingested cold, and its store; its first slice ingested again, each
    time against its work floor (``bench/trials.py``)."""

    name: str
    history: str  # what was generated
    cold: ColdResult
    store: StoreSize
    trials: Trials
    instructions: Instructions | str | None = None  # its first slice counted (a str: why it was not)


@dataclass(frozen=True)
class Results:
    command: str
    profile: str
    shapes: tuple[ShapeResult, ...]
    startup: Startup  # the CPU an ingest spends starting, before any session
    cores: int  # CPUs the bench may run on
    warm: WarmResult
    live_events: LiveResult
    live_poll: LiveResult
    busy_large: BusyLatency
    idle: DaemonCost
    busy: DaemonCost
    recall: RecallResult  # `postrun mcp` over the cold ingest's store
    others_cpu: float  # share of the machine's CPU used by other processes during the run


def _at_most(percent: float, target: float) -> bool:
    """``percent`` ≤ ``target``, for CPU shares: the OS counts CPU time in clock ticks, and the
    difference of two float sums of them is off by about 1e-16 (12 ticks in 30 s gave 0.40000000000000036 %)."""
    return percent <= target + 1e-9


def _verdict(passed: bool | None) -> str:
    return "—" if passed is None else ("pass" if passed else "**miss**")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def shape_rows(shape: ShapeResult, cores: int) -> list[Row]:
    """1 and 6 for one shape."""
    cold, store, name = shape.cold, shape.store, shape.name
    first = cold.runs[0]
    trial = shape.trials.median
    work, wall, startup = trial.work, trial.cold.wall_seconds, trial.startup
    floor = shape.trials.floor_seconds
    started = trial.started_floor_seconds(cores)
    count = len(shape.trials.trials)
    out = [
        Row(
            f"1. Cold ingest, {name} (`postrun ingest`, whole process)",
            f"{cold.median('steps_per_second'):,.0f} steps/s, {cold.median('mb_per_second'):.1f} MB/s"
            f" ({_s(cold.median('wall_seconds'))} per run of {first.sessions:,} sessions,"
            f" {first.source_bytes / MB:,.0f} MB)",
            f"parse floor {_s(cold.median('floor_seconds'))} per run: {cold.median('ratio'):.1f}× it (no target)",
            None,
        ),
        Row(
            f"1. Work floor, {name} (the first slice's work no design can skip, CPU time: the sessions found,"
            " mapped, flagged and validated in Python, each step made the row the store writes (its record"
            " compressed, its search text), raw copies hashed and compressed, SQLite writing the rows; the median of"
            f" {count} trials, each a cold ingest of the slice into a fresh store and its floors right after it)",
            f"mapping {_s(work.mapping_seconds)}, records {_s(work.records_seconds)}, raw copies"
            f" {_s(work.copies_seconds)}, SQLite {_s(trial.sqlite_seconds)}"
            f" ({work.cpu_seconds / work.steps * 1e6:.0f} µs a step in Python): ÷ {cores} cores = {_s(floor)}",
            f"wall {_s(wall)} = **{wall / floor:.2f}× the work floor**,"
            f" target ≤ {WORK_FLOOR_RATIO_TARGET:g}×; {wall / started:.2f}× it with the start-up (that trial's:"
            f" `postrun ingest` of an empty folder {_s(startup.writer_seconds)} wall,"
            f" {_s(startup.writer_work_seconds)} CPU, an ingest process's imports"
            f" {_s(startup.process_seconds)} of CPU); {startup.against(floor, cores, WORK_FLOOR_RATIO_TARGET)}",
            wall / floor <= WORK_FLOOR_RATIO_TARGET,
        ),
        Row(
            f"1. Where the wall time goes, {name} (that trial, against the same slice ingested in line right after it)",
            trial.where_it_goes(cores, WORK_FLOOR_RATIO_TARGET),
            "no target: the parts beyond the work floor are what a ratio target leaves for",
            None,
        ),
        *_instructions_row(shape, trial.overhead(cores)),
        Row(
            f"1. Cores used, {name} (CPU time ÷ wall time of the whole ingest, its processes included)",
            f"{cold.median('cores_used'):.2f} of {cores}",
            f"target: all (≥ {CORES_USED_SHARE:.0%} of them)",
            cold.median("cores_used") >= CORES_USED_SHARE * cores,
        ),
    ]
    peers = [r.peer for r in cold.runs if r.peer is not None]
    if peers:
        out.append(
            Row(
                f"1. Cold ingest vs `agentsview sync`, {name} ({AGENTSVIEW} {AGENTSVIEW_VERSION}, same slices)",
                f"{AGENTSVIEW} {_s(median([p.wall_seconds for p in peers]))} per run"
                f" ({median([p.cpu_seconds for p in peers]):.2f} s CPU)",
                f"ratio **{cold.median('peer_ratio'):.2f}× its time**, target ≤ {PEER_RATIO_TARGET:g}×; at the"
                f" work floor with the start-up the first run would be {started / peers[0].wall_seconds:.2f}×",
                cold.median("peer_ratio") <= PEER_RATIO_TARGET,
            )
        )
    out += [
        Row(
            f"6. Store size, {name}, records and search index ({store.sessions:,} sessions, {store.steps:,} steps,"
            f" {store.records_bytes / MB:,.0f} MB)",
            f"{store.records_bytes / store.steps:,.0f} bytes per step,"
            f" {store.records_bytes_per_source_mb / MB:.2f} MB per source MB",
            f"target ≤ {STORE_MB_PER_MB_TARGET:g} MB per source MB",
            store.records_bytes_per_source_mb / MB <= STORE_MB_PER_MB_TARGET,
        ),
        Row(
            f"6. Store size, {name}, with the vault's raw copies ({store.store_bytes / MB:,.0f} MB, db + wal + shm)",
            f"{store.bytes_per_step:,.0f} bytes per step, {store.bytes_per_source_mb / MB:.2f} MB per source MB",
            f"target ≤ {STORE_WITH_RAW_MB_PER_MB_TARGET:g} MB per source MB",
            store.bytes_per_source_mb / MB <= STORE_WITH_RAW_MB_PER_MB_TARGET,
        ),
    ]
    return out


def _instructions_row(shape: ShapeResult, overhead: Overhead) -> list[Row]:
    found = shape.instructions
    if found is None:
        return []
    figure = (
        f"1. Instructions, {shape.name} (the first slice under cachegrind: user-space instructions, each run alike)"
    )
    if isinstance(found, str):
        return [Row(figure, f"not counted: {found}", "no target", None)]
    return [Row(figure, found.describe(), found.against(overhead), None)]


def rows(results: Results) -> list[Row]:
    warm = results.warm
    startup = results.startup
    out = [
        Row(
            "1. Start-up of an ingest (best of 5, before any session is read)",
            f"`postrun ingest` of an empty folder {_s(startup.writer_seconds)} wall,"
            f" {_s(startup.writer_work_seconds)} CPU (interpreter, the CLI's and"
            f" the library's imports, settings); of it `postrun --version` {_s(startup.version_seconds)} of CPU;"
            f" each ingest process's imports {_s(startup.process_seconds)} of CPU, beside it",
            "no target: what every `postrun ingest` pays whatever its size, before its work can start",
            None,
        ),
        *(row for shape in results.shapes for row in shape_rows(shape, results.cores)),
    ]
    peak_rss = max(r.max_rss_bytes for shape in results.shapes for r in shape.cold.runs)
    out.append(
        Row(
            "1. Cold ingest memory",
            f"peak RSS {peak_rss / MB:.0f} MB (largest of the runs of every shape; its ingest processes' added in)",
            f"target ≤ {COLD_RSS_TARGET / MB:.0f} MB",
            peak_rss <= COLD_RSS_TARGET,
        )
    )
    out += [
        Row(
            f"2. Warm start (`postrun capture --once`, {warm.sessions:,} unchanged sessions)",
            f"{_s(warm.median_wall)} wall ({_s(warm.median_cpu)} CPU), {warm.transcripts_read} transcripts read",
            f"target ≤ {WARM_SECONDS_TARGET:g} s and 0 transcripts read",
            warm.median_wall <= WARM_SECONDS_TARGET and warm.transcripts_read == 0,
        ),
    ]
    updates = [*results.live_events.updates, *results.live_poll.updates]
    if updates:
        size = median([u.file_bytes for u in updates]) / MB
        out.append(
            Row(
                f"3. Incremental update ({size:.1f} MB, {median([u.steps for u in updates]):,.0f}-step open session,"
                " one assistant message appended)",
                f"{median([u.ingest_ms for u in updates]):.0f} ms re-ingest,"
                f" {median([u.rows_written for u in updates]):.0f} rows written",
                f"parse floor {median([u.floor_seconds for u in updates]) * 1000:.1f} ms;"
                f" ratio **{median([u.ratio for u in updates]):.1f}×**, target ≤ {INCREMENTAL_RATIO_TARGET:g}×"
                f" and ≤ {INCREMENTAL_ROWS_TARGET} rows",
                median([u.ratio for u in updates]) <= INCREMENTAL_RATIO_TARGET
                and median([u.rows_written for u in updates]) <= INCREMENTAL_ROWS_TARGET,
            )
        )
    for live, target, name in (
        (results.live_events, LATENCY_EVENTS_TARGET, "events"),
        (results.live_poll, LATENCY_POLL_TARGET, "`POSTRUN_USE_EVENTS=0`"),
    ):
        latencies = [s.latency_seconds for s in live.samples]
        p95 = percentile(latencies, 0.95)
        out.append(
            Row(
                f"4. Latency write → visible, {name} ({len(latencies)} writes, unpaced sessions)",
                f"p50 {_s(percentile(latencies, 0.5))}, p95 {_s(p95)}",
                f"target p95 ≤ {target:g} s",
                p95 <= target and live.exported,
            )
        )
        paced = [u.latency_seconds for u in live.updates]
        if paced:
            out.append(
                Row(
                    f"4. Latency, {name}, paced: the large session ({len(paced)} writes)",
                    f"p50 {_s(percentile(paced, 0.5))}, max {_s(max(paced))}",
                    "no target (pacing holds it back by design)",
                    None,
                )
            )
    large = results.busy_large
    if large.latencies:
        p95 = percentile(list(large.latencies), 0.95)
        out += [
            Row(
                f"4. Latency write → stored step, the large session kept busy ({large.file_bytes / MB:.1f} MB,"
                f" {large.steps:,} steps; a message every ~2 s for {large.seconds:.0f} s)",
                f"p50 {_s(percentile(list(large.latencies), 0.5))}, p95 {_s(p95)}"
                f" ({len(large.latencies)} messages; {large.unseen} not stored 60 s later)",
                f"target p95 ≤ {BUSY_LATENCY_TARGET:g} s",
                p95 <= BUSY_LATENCY_TARGET and large.unseen == 0,
            ),
            Row(
                "5. Busy capture, that large session (capture's CPU from the window's start until its last"
                f" message was stored, {large.cpu_until_seconds:.1f} s, over the {large.seconds:.0f} s window)",
                f"{large.cpu_percent:.2f} % of a core: {len(large.ingest_ms)} re-ingests for"
                f" {len(large.latencies) + large.unseen} messages, median"
                f" {median(list(large.ingest_ms)) if large.ingest_ms else float('nan'):.0f} ms; parse of the file"
                f" {large.floor_seconds * 1000:.1f} ms",
                f"target ≤ {BUSY_CPU_TARGET:g} % per busy session",
                _at_most(large.cpu_percent, BUSY_CPU_TARGET),
            ),
        ]
    idle, busy = results.idle, results.busy
    out += [
        Row(
            f"5. Idle capture CPU ({idle.sessions_watched:,} sessions, {idle.seconds:.0f} s)",
            f"{idle.cpu_percent:.3f} % of a core",
            f"target ≤ {IDLE_CPU_TARGET:g} %",
            _at_most(idle.cpu_percent, IDLE_CPU_TARGET),
        ),
        Row(
            "5. Idle capture memory",
            f"RSS {idle.rss_peak_bytes / MB:.1f} MB idle;"
            f" high-water mark over its life (start-up included) {idle.rss_high_water_bytes / MB:.1f} MB",
            f"target ≤ {IDLE_RSS_TARGET / MB:.0f} MB",
            idle.rss_high_water_bytes <= IDLE_RSS_TARGET,
        ),
        Row(
            f"5. Busy capture: {busy.busy_sessions} sessions rewritten every ~2 s for {busy.seconds:.0f} s",
            f"{busy.cpu_percent_per_busy_session:.2f} % of a core per busy session ({busy.cpu_percent:.2f} % total;"
            f" {busy.rewrites} rewrites, {busy.ingests} ingests, median {median(busy.ingest_ms):.0f} ms, the last"
            f" rewrites ingested {busy.tail_seconds:.1f} s after the window, their CPU counted;"
            f" RSS peak {busy.rss_peak_bytes / MB:.0f} MB)",
            f"target ≤ {BUSY_CPU_TARGET:g} % per busy session",
            _at_most(busy.cpu_percent_per_busy_session, BUSY_CPU_TARGET),
        ),
    ]
    out += [
        Row(f"7. {figure}", measured, target, passed)
        for figure, measured, target, passed in recall_rows(results.recall)
    ]
    return out


def table(results: Results) -> list[str]:
    lines = ["| Figure | Measured (median) | Floor and target | Result |", "|---|---|---|---|"]
    lines += [f"| {r.figure} | {r.measured} | {r.reference} | {_verdict(r.passed)} |" for r in rows(results)]
    return lines


def details(results: Results) -> list[str]:
    warm = results.warm
    lines = ["Per run:", ""]
    for shape in results.shapes:
        cold = shape.cold
        lines.append(
            f"- cold ingest runs, {shape.name} (wall s / floor s / ratio / CPU s / peak RSS MB): "
            + "; ".join(
                f"{r.wall_seconds:.2f} / {r.floor_seconds:.3f} / {r.ratio:.1f}× / {r.cpu_seconds:.2f} /"
                f" {r.max_rss_bytes / MB:.0f}"
                for r in cold.runs
            )
        )
        lines.append(
            f"- work-floor trials, {shape.name} (wall s / work floor s / ratio, in the order they ran): "
            + shape.trials.describe()
        )
        if any(r.peer for r in cold.runs):
            lines.append(
                f"- {AGENTSVIEW} sync runs, {shape.name} (wall s / CPU s / peak RSS MB / Postrun's ratio to it): "
                + "; ".join(
                    f"{r.peer.wall_seconds:.2f} / {r.peer.cpu_seconds:.2f} / {r.peer.max_rss_bytes / MB:.0f} /"
                    f" {r.peer_ratio:.2f}×"
                    for r in cold.runs
                    if r.peer is not None
                )
            )
        if shape.store.by_table:
            lines.append(
                f"- store by table, {shape.name}: "
                + ", ".join(f"{name} {size / MB:.1f} MB" for name, size in shape.store.by_table[:8])
            )
    lines += [
        f"- warm start wall s: {', '.join(f'{w:.3f}' for w in warm.wall_seconds)};"
        f" peak RSS {warm.max_rss_bytes / MB:.0f} MB; transcripts counted by {warm.proof}",
    ]
    for live in (results.live_events, results.live_poll):
        mode = "events" if live.events else "poll only"
        lines.append(
            f"- large-session updates, {mode} (ms / floor ms / rows / trigger): "
            + "; ".join(
                f"{u.ingest_ms:.0f} / {u.floor_seconds * 1000:.1f} / {u.rows_written} / {u.trigger}"
                for u in live.updates
            )
        )
        lines.append(
            f"- latency samples, {mode} (s): "
            + ", ".join(f"{s.latency_seconds:.2f}" for s in sorted(live.samples, key=lambda s: s.latency_seconds))
            + f"; `postrun export` showed the last write: {'yes' if live.exported else 'NO'}"
        )
    busy = results.busy_large
    lines.append(
        "- busy large session, write → visible (s): "
        + ", ".join(f"{latency:.2f}" for latency in sorted(busy.latencies))
        + f"; re-ingests (ms): {', '.join(f'{ms:.0f}' for ms in busy.ingest_ms)}"
    )
    return lines


def section(results: Results, machine: Machine) -> str:
    lines = [
        BEGIN,
        "",
        f"Command: `{results.command}` ({results.profile})",
        "",
        *machine.lines(),
        *(f"- History, {shape.name}: {shape.history}" for shape in results.shapes),
        f"- Parse floor parser: {PARSER}",
        f"- CPU used outside the bench's own processes during the run (other processes, and kernel threads"
        f" such as the writeback of the generated files): {results.others_cpu:.0%} of the machine"
        + (" — the figures may be inflated by it" if results.others_cpu > NOISY_SHARE else ""),
        "",
        *table(results),
        "",
        *details(results),
        "",
        END,
    ]
    return "\n".join(lines)


def write_benchmarks(path: Path, text: str, header: Sequence[str]) -> None:
    """Replace the marked section of ``path`` (or create the file with ``header`` around it)."""
    if path.exists():
        current = path.read_text()
        if BEGIN in current and END in current:
            before, _, rest = current.partition(BEGIN)
            _, _, after = rest.partition(END)
            path.write_text(before + text + after)
            return
        path.write_text(current.rstrip("\n") + "\n\n" + text + "\n")
        return
    path.write_text("\n".join(header) + "\n\n" + text + "\n")
