"""Cold ingest of another agent's history (Claude Code, Codex): against agentsview, its work floor, its store.

One ``postrun ingest --agent <kind> <root>`` of the whole history (whole process: wall and
CPU from ``wait4``, its ingest processes included), then, with a peer, one ``agentsview
sync`` of a copy of the same files (the agent's folder named by agentsview's own variable,
the rest as the Cline bench's peer: its own HOME, XDG folders and data dir, no daemon, no
update check or telemetry). The work floor is the same files found and mapped, their steps'
rows made and raw copies compressed in a fresh process (``bench/workfloor.py``) plus SQLite
writing the stored steps (``bench/sqlitefloor.py``), spread over the cores: the least wall
time any design of the ingest could take here. It is measured in trials (``bench/trials.py``),
each a cold ingest of the history into a fresh store with its floors right after it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.peer import AGENTSVIEW, AGENTSVIEW_VERSION, ensure_agentsview, peer_env
from bench.proc import Finished, cores, ingested, postrun_command, run
from bench.storesize import StoreSize, measure_store
from bench.trials import Trials, measure_trials

PEER_RATIO_TARGET = 0.5
WORK_FLOOR_RATIO_TARGET = 1.3
STORE_WITH_RAW_MB_PER_MB_TARGET = 0.5
_SYNCED = re.compile(r"Sync complete: (?P<sessions>\d+) sessions synced")


@dataclass(frozen=True)
class AgentCold:
    kind: str
    sessions: int
    source_bytes: int
    cold: Finished
    peer: Finished | None
    trials: Trials
    store: StoreSize

    @property
    def started_floor_seconds(self) -> float:
        """The work floor with the start-up (``Startup.floor_with``), of the median trial."""
        return self.trials.median.started_floor_seconds(self.trials.cores)


def measure(
    kind: str,
    root: Path,
    env: Mapping[str, str],
    *,
    sessions: int,
    source_bytes: int,
    peer_variable: str | None,
    workdir: Path,
    trials: int = 5,
) -> AgentCold:
    """``sessions`` sessions of ``kind`` under ``root`` ingested cold (``env`` names the store);
    with ``peer_variable`` (agentsview's variable for that agent's folder), agentsview's sync too;
    then ``trials`` trials of the same against the work floor."""
    os.sync()  # the generator's writeback is not the ingest's cost
    cold = run([*postrun_command(), "ingest", "--agent", kind, str(root)], env, timeout=7200)
    stored = ingested(cold, kind)
    if cold.returncode != 0 or stored != sessions:
        raise RuntimeError(f"cold ingest: exit {cold.returncode}, {stored} of {sessions}: {cold.stderr[-2000:]}")
    peer = None if peer_variable is None else _peer(workdir / "peer", root, peer_variable, sessions)
    return AgentCold(
        kind=kind,
        sessions=sessions,
        source_bytes=source_bytes,
        cold=cold,
        peer=peer,
        store=measure_store(Path(env["POSTRUN_DB"]), source_bytes=source_bytes),
        trials=measure_trials(
            kind, root, ["."], env, sessions=sessions, count=trials, cores=cores(), workdir=workdir / "trials"
        ),
    )


def _peer(workdir: Path, root: Path, variable: str, sessions: int) -> Finished:
    binary = ensure_agentsview()
    copy = workdir / root.name
    shutil.copytree(root, copy, copy_function=shutil.copy2)
    env = peer_env(workdir, os.environ, {variable: str(copy)})
    os.sync()
    finished = run([str(binary), "sync"], env, timeout=7200)
    found = _SYNCED.search(finished.stdout + finished.stderr)
    if finished.returncode != 0 or found is None or int(found["sessions"]) < sessions:
        raise RuntimeError(
            f"{AGENTSVIEW} sync: exit {finished.returncode}: {(finished.stdout + finished.stderr)[-2000:]}"
        )
    return finished


def rows(figures: AgentCold) -> list[str]:
    """The cold-ingest rows of a section's table (| Figure | Result | Target | |)."""
    cold, store = figures.cold, figures.store
    floor = figures.trials.floor_seconds
    mb = 2**20
    out = []
    if figures.peer is not None:
        share = cold.wall_seconds / figures.peer.wall_seconds
        out.append(
            f"| cold ingest vs {AGENTSVIEW} {AGENTSVIEW_VERSION} sync | {cold.wall_seconds:.1f} s wall,"
            f" {cold.cpu_seconds:.1f} s CPU, peak {cold.tree_rss_bytes >> 20} MB; {AGENTSVIEW}"
            f" {figures.peer.wall_seconds:.1f} s wall, {figures.peer.cpu_seconds:.1f} s CPU: **{share:.2f}× its time**"
            f" (at the work floor with the start-up it would be"
            f" {figures.started_floor_seconds / figures.peer.wall_seconds:.2f}×)"
            f" | ≤ {PEER_RATIO_TARGET}× | {'met' if share <= PEER_RATIO_TARGET else 'missed'} |"
        )
    else:
        out.append(
            f"| cold ingest | {cold.wall_seconds:.1f} s wall, {cold.cpu_seconds:.1f} s CPU,"
            f" peak {cold.tree_rss_bytes >> 20} MB (no peer run) | ≤ {PEER_RATIO_TARGET}× {AGENTSVIEW}'s | — |"
        )
    trial = figures.trials.median
    wall, work, count, startup = trial.cold.wall_seconds, trial.work, len(figures.trials.trials), trial.startup
    ratio = wall / floor
    out += [
        f"| work floor (CPU: mapping {work.mapping_seconds:.2f} s, records {work.records_seconds:.2f} s,"
        f" raw copies {work.copies_seconds:.2f} s, SQLite {trial.sqlite_seconds:.2f} s; ÷ {figures.trials.cores}"
        f" cores; the median of {count} trials, each a cold ingest into a fresh store and its floors right after"
        f" it: {figures.trials.describe()})"
        f" | {floor:.2f} s; wall **{ratio:.2f}× the floor**"
        f" ({wall / figures.started_floor_seconds:.2f}× it with that trial's start-up: `postrun"
        f" ingest` of an empty folder {startup.writer_seconds:.2f} s wall, {startup.writer_work_seconds:.2f} s CPU,"
        " an ingest process's imports"
        f" {startup.process_seconds:.2f} s of CPU);"
        f" {startup.against(floor, figures.trials.cores, WORK_FLOOR_RATIO_TARGET)};"
        f" cores used {trial.cold.cpu_seconds / wall:.2f}"
        f" | ≤ {WORK_FLOOR_RATIO_TARGET}× | {'met' if ratio <= WORK_FLOOR_RATIO_TARGET else 'missed'} |",
        "| where the wall time goes (that trial, against the same history ingested in line right after it) |"
        f" {trial.where_it_goes(figures.trials.cores, WORK_FLOOR_RATIO_TARGET)} | no target | |",
        f"| store with the vault's raw copies ({store.store_bytes / mb:,.0f} MB for"
        f" {figures.source_bytes / mb:,.0f} MB of source)"
        f" | {store.bytes_per_source_mb / mb:.2f} MB per source MB (records and index"
        f" {store.records_bytes_per_source_mb / mb:.2f}) | ≤ {STORE_WITH_RAW_MB_PER_MB_TARGET} MB |"
        f" {'met' if store.bytes_per_source_mb / mb <= STORE_WITH_RAW_MB_PER_MB_TARGET else 'missed'} |",
    ]
    return out
