"""The cyclic GC is paused only while one session is ingested, whatever the outcome."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import pytest

from postrun.agents.cline import SessionLocation
from postrun.errors import NotParseableYet
from postrun.ingest.ingester import Ingester, collector_paused
from postrun.store.db import Database

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "cline-real" / "b_run_commands" / "data"


def test_collector_is_paused_inside_and_restored_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_collector_left_alone_when_the_caller_disabled_it() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_ingest_restores_the_collector_after_success_and_after_a_torn_file(tmp_path: Path) -> None:
    shutil.copytree(REAL, tmp_path / "data")
    root = tmp_path / "data" / "sessions"
    session_id = next(p.name for p in root.iterdir())
    location = SessionLocation.in_root(root, session_id)
    with Database.open(tmp_path / "store.db") as database:
        ingester = Ingester(database, max_bytes=2**26)
        outcome, _ = ingester.ingest(location)
        assert outcome.status == "ingested"
        assert gc.isenabled()
        location.messages.write_text('{"messages": [')
        with pytest.raises(NotParseableYet):
            ingester.ingest(location)
        assert gc.isenabled()
