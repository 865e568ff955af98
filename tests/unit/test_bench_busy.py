"""The bench's busy figures: capture's CPU covers the work the window's writes cause."""

from __future__ import annotations

from pathlib import Path

from bench.daemon import measure_busy
from bench.history import open_session
from bench.live import measure_busy_large
from bench.proc import isolated_env


def test_the_busy_large_sessions_cpu_is_read_once_its_messages_are_stored(tmp_path: Path) -> None:
    # A window shorter than the debounce: its one message is stored after the window closes.
    # Reading capture's CPU as the window closed left that re-ingest out of the figure (the
    # last ~2 s of a 60 s window's messages, about one re-ingest in sixteen).
    root = tmp_path / "cline" / "sessions"
    env = isolated_env(tmp_path / "home", db=tmp_path / "store" / "postrun.db", cline_dir=root)
    writer = open_session(11, target_bytes=1)

    busy = measure_busy_large(
        root, env, session=(writer, len(writer.messages)), seconds=0.5, seed=3, log_path=tmp_path / "busy.log"
    )

    assert busy.unseen == 0 and len(busy.latencies) == 1  # one message, written as the window opened
    assert busy.cpu_until_seconds >= busy.latencies[0] > busy.seconds
    assert busy.ingest_ms  # capture logged the re-ingest whose CPU is counted


def test_the_busy_sessions_cpu_is_read_once_their_last_rewrites_are_ingested(tmp_path: Path) -> None:
    # Seed 1 puts the one session's first rewrite 0.27 s into a 1 s window: its ingest, after
    # the debounce, comes after the window closes and must still be counted.
    root = tmp_path / "cline" / "sessions"
    env = isolated_env(tmp_path / "home", db=tmp_path / "store" / "postrun.db", cline_dir=root)
    writer = open_session(12, target_bytes=1)
    shown = len(writer.messages)
    writer.add_turn()  # messages to release, one per rewrite

    busy = measure_busy(root, env, sessions=[(writer, shown)], seconds=1.0, seed=1, log_path=tmp_path / "busy.log")

    assert busy.rewrites == 1
    assert busy.ingests >= 1 and busy.tail_seconds > 0
