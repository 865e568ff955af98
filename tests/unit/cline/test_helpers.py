"""Helpers (sub-agents, teammates) as actors of the lead's session: pure mapping and placement."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from postrun.agents.cline import SessionFiles, map_session, read_session
from postrun.agents.cline.files import SideFile
from postrun.errors import NotParseableYet
from postrun.records import MappedSession, SourceFile, StoredActor
from tests.unit.cline.kit import (
    ALL_AUTO,
    FIXTURES,
    MAX_BYTES,
    T0,
    SessionLocation,
    answer,
    assert_valid,
    call,
    default_manifest,
    files_for,
    message,
    prompt,
    remap,
)

LEAD = "1795976749765_vx695"
SUB1, SUB2 = "agent_1795976750621_u6sv2j", "agent_1795976750622_zikz6r"
CLI = {"kind": "cli", "tool_auto_approve": True, "settings": "missing"}


@pytest.fixture(scope="module")
def real() -> MappedSession:
    location = SessionLocation.in_root(FIXTURES / "cline-real" / "h_subagents" / "data" / "sessions", LEAD)
    mapped, _ = map_session(read_session(location, max_bytes=MAX_BYTES), CLI)
    assert_valid(mapped)
    return mapped


def test_each_helper_transcript_is_an_actor_under_the_root(real: MappedSession) -> None:
    assert real.actors == [
        {"id": "root", "type": "root", "label": "lead"},
        {
            "id": SUB1,
            "type": "subagent",
            "parent_id": "root",
            "label": "Review /home/dev/work/h_subagents/svc/config.py and report risky settings.",
        },
        {
            "id": SUB2,
            "type": "subagent",
            "parent_id": "root",
            "label": "Run /home/dev/work/h_subagents/svc/main.py from the svc directory and report the output.",
        },
    ]


def test_helper_steps_follow_the_step_that_started_them(real: MappedSession) -> None:
    rows = [row.record for row in real.steps]
    assert [row["seq"] for row in rows] == list(range(len(rows)))
    assert {row["turn_id"] for row in rows} == {"turn:1"}
    spawns = [row for row in rows if row["payload"].get("tool_name") == "spawn_agent"]
    assert [row["payload"]["raw"]["actor_id"] for row in spawns] == [SUB1, SUB2]
    for spawn in spawns:
        helper = spawn["payload"]["raw"]["actor_id"]
        following = rows[spawn["seq"] + 1]
        assert following["actor_id"] == helper and following["payload"]["role"] == "user"
    read = next(row for row in rows if row["type"] == "read")
    command = next(row for row in rows if row["type"] == "command")
    assert (read["actor_id"], read["id"]) == (SUB1, f"{SUB1}/call_2_0_0#0")
    assert (command["actor_id"], command["payload"]["command"]) == (SUB2, "cd svc && python3 main.py")
    assert [turn["step_ids"] for turn in real.turns] == [[row["id"] for row in rows]]


def test_usage_adds_every_helper(real: MappedSession) -> None:
    assert real.session["metrics"]["api_requests"] == 6
    assert real.session["metrics"]["tokens"]["input"] == 6190
    assert real.helper_metrics[SUB1]["api_requests"] == 2
    assert real.helper_metrics[SUB2]["tokens"]["output"] == 100


def _with_helpers(files: SessionFiles, **documents: Any) -> SessionFiles:
    sides = []
    for name, document in sorted(documents.items()):
        path = files.location.folder / f"{name}.messages.json"
        if isinstance(document, Exception):
            sides.append(SideFile(name, path, None, NotParseableYet(str(path), "messages", "cut")))
        else:
            sides.append(SideFile(name, path, document, fingerprint=SourceFile(str(path), 1, 1, 1)))
    prints = files.source_files + tuple(side.fingerprint for side in sides if side.fingerprint is not None)
    return dataclasses.replace(files, helpers=tuple(sides), source_files=prints)


def _lead() -> list[dict[str, Any]]:
    return [
        prompt("u1", "split it"),
        message("a1", "assistant", [call("c1", "spawn_agent", {"task": "Do A."})], ts=T0 + 100),
        message("r1", "user", [answer("c1", '{"text": "done"}', name="spawn_agent")], ts=T0 + 900),
        message("a2", "assistant", [{"type": "text", "text": "All done."}], ts=T0 + 1000),
    ]


def _helper(task: str, *, ts: int | None = T0 + 200, agent: str | None = "subagent") -> dict[str, Any]:
    messages = [
        message("h1", "user", [{"type": "text", "text": task}], ts=ts),
        message("h2", "assistant", [{"type": "text", "text": "ok"}], ts=ts, metrics={"inputTokens": 7, "cost": 0.5}),
    ]
    return {"messages": messages, **({"agent": agent} if agent else {})}


def _map(files: SessionFiles, kept: dict[str, StoredActor] | None = None) -> MappedSession:
    mapped, _ = map_session(files, ALL_AUTO, None, kept or {})
    assert_valid(mapped)
    return mapped


def _ids(mapped: MappedSession) -> list[str]:
    return [row.id for row in mapped.steps]


def test_a_helper_task_that_looks_like_a_prompt_never_opens_a_turn() -> None:
    files = _with_helpers(
        files_for(_lead(), default_manifest()), agent_1=_helper('<user_input mode="act">Do A.</user_input>')
    )
    mapped = _map(files)
    assert [turn["id"] for turn in mapped.turns] == ["turn:1"]
    task = next(row.record for row in mapped.steps if row.id == "agent_1/h1#0")
    assert task["payload"] == {"role": "user", "text": "Do A."} and task["turn_id"] == "turn:1"
    assert _ids(mapped) == ["u1#0", "c1#0", "agent_1/h1#0", "agent_1/h2#0", "a2#0"]


def test_unmatched_helpers_go_after_their_turn_else_at_the_end() -> None:
    lead = [*_lead(), prompt("u2", "next", ts=T0 + 5000), message("a3", "assistant", "fine", ts=T0 + 5100)]
    files = _with_helpers(
        files_for(lead, default_manifest()),
        early=_helper("Something nobody asked for.", ts=T0 + 300),
        late=_helper("Another thing.", ts=T0 + 6000),
        timeless=_helper("No time at all.", ts=None),
    )
    mapped = _map(files)
    ids = _ids(mapped)
    assert ids.index("early/h1#0") == ids.index("a2#0") + 1  # the last step of turn 1
    assert ids[-4:] == ["late/h1#0", "late/h2#0", "timeless/h1#0", "timeless/h2#0"]
    assert {row.record["turn_id"] for row in mapped.steps if row.record["actor_id"] == "early"} == {"turn:1"}
    assert {row.record["turn_id"] for row in mapped.steps if row.record["actor_id"] == "late"} == {"turn:2"}
    assert "actor_id" not in next(row for row in mapped.steps if row.id == "c1#0").record["payload"]["raw"]


def test_teammate_type_and_label_come_from_the_name_when_the_file_does_not_say() -> None:
    files = _with_helpers(files_for(_lead(), default_manifest()), reviewer__Ab12=_helper("Do A.", agent=None))
    actor = _map(files).actors[1]
    assert actor == {"id": "reviewer__Ab12", "type": "teammate", "parent_id": "root", "label": "reviewer"}


def test_a_helper_of_the_wrong_shape_is_its_own_failure() -> None:
    files = _with_helpers(files_for(_lead(), default_manifest()), bad={"messages": "nope"}, good=_helper("Do A."))
    mapped = _map(files)
    assert [str(problem) for problem in mapped.unread] == [
        f"{files.location.folder}/bad.messages.json: wrong shape: messages: expected a list"
    ]
    assert [actor["id"] for actor in mapped.actors] == ["root", "good"]
    assert f"{files.location.folder}/bad.messages.json" not in [f.path for f in mapped.source_files]


def test_an_unreadable_helper_keeps_what_the_store_holds_of_it() -> None:
    fine = _map(_with_helpers(files_for(_lead(), default_manifest()), agent_1=_helper("Do A.")))
    stored = StoredActor(
        fine.actors[1],
        tuple(row for row in fine.steps if row.record["actor_id"] == "agent_1"),
        fine.helper_metrics["agent_1"],
    )
    torn = _with_helpers(files_for(_lead(), default_manifest()), agent_1=ValueError("torn"))
    kept = _map(torn, {"agent_1": stored})
    assert [row.blob for row in kept.steps] == [row.blob for row in fine.steps]
    assert kept.actors == fine.actors and kept.session == fine.session
    assert [type(problem) for problem in kept.unread] == [NotParseableYet]
    assert _ids(_map(torn)) == ["u1#0", "c1#0", "a2#0"]  # nothing stored: nothing to keep


def test_the_cache_gives_what_a_fresh_mapping_gives(tmp_path: Path) -> None:
    source = FIXTURES / "cline" / "teammate" / "data"
    shutil.copytree(source, tmp_path / "data")
    location = SessionLocation.in_root(tmp_path / "data" / "sessions", "1790000500000_teams")
    cache = remap(read_session(location, max_bytes=MAX_BYTES), CLI, None)
    helper = location.folder / "reviewer__Q9aa01.messages.json"
    helper.write_text(helper.read_text().replace("Summary: app.py", "Summary (edited): app.py"))
    cache = remap(read_session(location, max_bytes=MAX_BYTES), CLI, cache)
    helper.unlink()
    remap(read_session(location, max_bytes=MAX_BYTES), CLI, cache)
