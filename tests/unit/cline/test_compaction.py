"""The compaction sidecar's summary: one system message of the lead, where the compaction happened."""

from __future__ import annotations

import dataclasses
from typing import Any

from postrun.agents.cline import SessionFiles, map_session
from postrun.agents.cline.files import SideFile
from postrun.errors import NotParseableYet
from postrun.records import MappedSession, SourceFile
from tests.unit.cline.kit import ALL_AUTO, T0, assert_valid, default_manifest, files_for, message, prompt

LEAD = [
    prompt("u1", "first", ts=T0),
    message("a1", "assistant", "one", ts=T0 + 10),
    prompt("u2", "second", ts=T0 + 20),
    message("a2", "assistant", "two", ts=T0 + 30),
]


def _summary(count: Any, text: str = "Context summary: did one thing.") -> dict[str, Any]:
    summary = message(
        "s1", "user", [{"type": "text", "text": text}], ts=T0 + 25, metadata={"kind": "compaction_summary"}
    )
    return {"version": 1, "source_message_count": count, "messages": [summary, message("k", "user", "kept", ts=T0)]}


def _with_sidecar(document: Any = None, error: NotParseableYet | None = None) -> SessionFiles:
    files = files_for(LEAD, default_manifest())
    path = files.location.compaction
    if error is not None:
        return dataclasses.replace(files, compaction=SideFile("compaction", path, None, error))
    fingerprint = SourceFile(str(path), 1, 1, 1)
    side = SideFile("compaction", path, document, fingerprint=fingerprint)
    return dataclasses.replace(files, compaction=side, source_files=(*files.source_files, fingerprint))


def _map(files: SessionFiles) -> MappedSession:
    mapped, _ = map_session(files, ALL_AUTO)
    assert_valid(mapped)
    return mapped


def test_the_summary_is_one_system_step_after_the_messages_it_folded() -> None:
    mapped = _map(_with_sidecar(_summary(2)))
    ids = [row.id for row in mapped.steps]
    assert ids == ["u1#0", "a1#0", "compaction:s1#0", "u2#0", "a2#0"]
    step = mapped.steps[2].record
    assert step["payload"] == {"role": "system", "text": "Context summary: did one thing."}
    assert (step["turn_id"], step["actor_id"], step["seq"]) == ("turn:1", "root", 2)
    assert [row.record["seq"] for row in mapped.steps] == list(range(5))
    assert str(_with_sidecar().location.compaction) in [f.path for f in mapped.source_files]


def test_no_summary_without_its_kind_and_a_torn_sidecar_is_reported() -> None:
    plain = _summary(2)
    plain["messages"][0].pop("metadata")
    assert [row.id for row in _map(_with_sidecar(plain)).steps] == ["u1#0", "a1#0", "u2#0", "a2#0"]
    assert [row.id for row in _map(_with_sidecar(_summary(None))).steps][-1] == "compaction:s1#0"
    torn = _map(_with_sidecar(error=NotParseableYet("sidecar", "compaction", "cut")))
    assert [type(problem) for problem in torn.unread] == [NotParseableYet]
    assert len(torn.steps) == 4
