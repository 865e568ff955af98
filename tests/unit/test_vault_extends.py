"""The vault's one rule: when a new version of a file only extends the previous one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from postrun.store.vault import extends
from tests.conftest import FIXTURES


def cline(messages: list[Any], **header: Any) -> bytes:
    """A transcript laid out as Cline writes it (``JSON.stringify(doc, null, 2)``)."""
    document = {"version": 1, "updated_at": header.pop("updated_at", "2026-11-29T18:00:00.000Z"), **header}
    document["messages"] = messages
    document["system_prompt"] = "You are Cline."
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


def message(index: int, text: str = "hello") -> dict[str, Any]:
    return {"id": f"m{index}", "role": "user", "content": [{"type": "text", "text": f"{text} {index}"}], "ts": index}


M = [message(i) for i in range(4)]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (cline(M[:2]), cline(M[:4], updated_at="2026-11-29T18:05:00.000Z"), True),  # appended, restamped
        (cline([]), cline(M[:1]), True),  # the first message
        (cline(M[:3]), cline(M[:3], updated_at="2026-11-29T19:00:00.000Z"), True),  # only restamped
        (b'{"a": 1}\n', b'{"a": 1}\n{"b": 2}\n', True),  # any file appended to
        (cline(M[:4]), cline(M[:2]), False),  # a checkpoint restore removed messages
        (cline(M[:3]), cline([M[0], message(1, "changed"), M[2], M[3]]), False),  # a message changed
        (cline(M[:2]), cline([M[0], message(9), M[1]]), False),  # a message inserted
        (cline(M[:2]), cline([M[0], {**M[1], "metrics": {"cost": 1}}]), False),  # the last message grew
        (cline(M[:2]), orjson.dumps({"messages": M[:3]}), False),  # laid out differently: kept, never lost
        (cline(M[:2]), b"", False),
        (b'{"status": "running"}', b'{"status": "completed"}', False),  # a manifest rewritten
    ],
)
def test_extends(old: bytes, new: bytes, expected: bool) -> None:
    assert extends(old, new) is expected


def test_a_message_whose_text_holds_the_list_marker_is_not_mistaken_for_the_list() -> None:
    tricky = message(0, 'x\n  "messages": [\n  ]')  # escaped in the file: never a line of its own
    old = cline([tricky])
    assert extends(old, cline([tricky, M[1]]))
    assert not extends(old, cline([message(0), M[1]]))


def test_every_real_cline_rewrite_of_a_transcript_only_extends_it() -> None:
    """Real runs: Cline rewrites each transcript whole many times; each valid version extends
    the one before (so each transcript keeps one raw version), a manifest rewrite does not."""
    transcripts = manifests_rewritten = 0
    for index in sorted(FIXTURES.glob("cline-real/*/snapshots/index.jsonl")):
        last: dict[str, bytes] = {}
        for line in index.read_text().splitlines():
            entry = json.loads(line)
            if not entry["valid_json"]:
                continue
            data = (index.parent / entry["snapshot"]).read_bytes()
            previous = last.get(entry["file"])
            if previous is not None and previous != data:
                if entry["file"].endswith(".messages.json"):
                    transcripts += 1
                    assert extends(previous, data), entry["snapshot"]
                else:
                    manifests_rewritten += not extends(previous, data)
            last[entry["file"]] = data
    assert transcripts > 20 and manifests_rewritten > 5


def test_a_copy_of_the_fixture_is_what_the_snapshots_end_with() -> None:
    # Guards the test above: the snapshot sequences are the real files' histories.
    case = FIXTURES / "cline-real" / "a_read_edit"
    final = next(case.glob("data/sessions/*/*.messages.json"))
    assert any(Path(p).read_bytes() == final.read_bytes() for p in case.glob("snapshots/*.messages.json"))
