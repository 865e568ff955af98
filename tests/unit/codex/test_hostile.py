"""Rollouts with wrong shapes everywhere map to valid records or fail with one SourceError."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from postrun.agents.codex import Rollout, RolloutData, SessionFiles, map_session
from postrun.agents.codex.layout import SessionLocation
from postrun.appendonly import Appended
from postrun.errors import SourceError
from postrun.records import SourceFile
from tests.support.codex_rollouts import RolloutWriter
from tests.unit.codex.kit import assert_valid

SID = "01a2330d-2877-74e1-85dd-6d88f53166fa"
CHILD = "01a2330d-8622-79c1-aa53-fa5925b71fc2"
ODD_VALUES: list[Any] = [
    None,
    0,
    -1,
    2**70,
    1.5,
    True,
    "",
    "x",
    "\u0000",
    "2026-13-45T99:99:99Z",
    [],
    {},
    [None],
    {"a": None},
]


def _sample() -> tuple[RolloutWriter, RolloutWriter]:
    root = RolloutWriter(SID)
    child = RolloutWriter(CHILD, parent=SID, nickname="Dirac")
    root.begin("t1", policy="on-request")
    root.user("u1", "go", "t1")
    root.reasoning("rs1", "t1", ["think"])
    root.command("c1", "ls", "t1", output="a\n")
    root.call("c2", "exec_command", {"cmd": "x", "sandbox_permissions": "require_escalated"}, "t1")
    root.output("c2", "approval policy is Never; reject command", "t1")
    root.patch(
        "p1",
        "t1",
        {"/a": {"type": "add", "content": "x"}, "/b": {"type": "update", "unified_diff": "@@", "move_path": "/c"}},
    )
    root.spawn("s1", "t1", CHILD, "Dirac", "sub")
    child.task_started("ct1", parent_turn="t1", root_turn="t1")
    child.user("cu1", "sub", "ct1")
    child.command("cc1", "pwd", "ct1", output="/\n", exit_code=2)
    root.add("compacted", {"message": "summary"})
    root.item("t1", {"type": "ContextCompaction", "id": "cc"})
    root.tokens("r1", "t1", input_tokens=10, output=1)
    root.call("g1", "create_goal", {"objective": "x"}, "t1")
    root.task_complete("t1")
    root.settings()
    root.task_started("t2")
    root.call("k1", "exec_command", {"cmd": "sleep 9"}, "t2")
    return root, child


def _mutate(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """``value`` with one field somewhere replaced by a value of another kind."""
    if isinstance(value, dict) and value and depth < 6:
        key = rng.choice(list(value))
        if rng.random() < 0.5:
            return {**value, key: _mutate(value[key], rng, depth + 1)}
        return {**value, key: rng.choice(ODD_VALUES)}
    if isinstance(value, list) and value and depth < 6:
        index = rng.randrange(len(value))
        return [*value[:index], _mutate(value[index], rng, depth + 1), *value[index + 1 :]]
    return rng.choice(ODD_VALUES)


def _files(root: list[Any], child: list[Any]) -> SessionFiles:
    def data(lines: list[Any], thread: str) -> RolloutData:
        body = b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)
        path = Path(f"/sessions/2026/12/01/rollout-2026-12-01T19-20-30-{thread}.jsonl")
        return RolloutData(Rollout(thread, path), Appended.whole(body, SourceFile(str(path), len(body), 0, 1)))

    lead = data(root, SID)
    return SessionFiles(SessionLocation(SID, lead.rollout), lead, (data(child, CHILD),))


@pytest.mark.parametrize("seed", range(300))
def test_a_wrong_shape_anywhere_is_skipped_or_one_source_error(seed: int) -> None:
    rng = random.Random(seed)
    root, child = _sample()
    lines = [list(root.lines), list(child.lines)]
    for _ in range(1 + seed % 4):
        which = lines[rng.randrange(2)]
        index = rng.randrange(len(which))
        which[index] = _mutate(which[index], rng)
    try:
        mapped, cache = map_session(_files(*lines))
    except SourceError:
        return
    assert_valid(mapped)
    again, _ = map_session(_files(*lines), cache)  # nothing new: the same records
    assert [row.blob for row in again.steps] == [row.blob for row in mapped.steps]


def test_deep_nesting_and_huge_lines_are_skipped_lines() -> None:
    root, child = _sample()
    deep = b'{"timestamp":"2026-12-01T19:20:30.000Z","type":"event_msg","payload":' + b'{"a":' * 2000 + b"{}"
    deep += b"}" * 2001
    huge = json.dumps({"type": "response_item", "payload": {"type": "message", "content": "x" * 2**22}}).encode()
    lines = [*root.lines[:3], deep, huge, *root.lines[3:]]
    mapped, _ = map_session(_files(lines, child.lines))
    assert_valid(mapped)
    assert len(mapped.steps) == len(map_session(_files(root.lines, child.lines))[0].steps)
