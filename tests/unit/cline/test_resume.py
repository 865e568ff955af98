"""Resuming where the last pass ended: Cline appends, so only new messages are walked."""

from __future__ import annotations

from typing import Any

import pytest

from postrun.agents.cline import MappingCache, map_session
from postrun.agents.cline.transcript import read_transcript
from postrun.errors import SourceError
from tests.unit.cline.kit import (
    ALL_AUTO,
    answer,
    call,
    default_manifest,
    files_for,
    item,
    message,
    prompt,
    remap,
    same_mapping,
)


def _session() -> list[dict[str, Any]]:
    return [
        prompt("u1", "list it"),
        message("a1", "assistant", [{"type": "text", "text": "ok"}, call("c1", "run_commands", ["ls"])]),
        message("r1", "user", [answer("c1", [item("ls", "a")])]),
        message("a2", "assistant", [call("c2", "run_commands", ["pwd"])]),
    ]


def _map(transcript: list[dict[str, Any]], cache: MappingCache | None) -> MappingCache:
    return remap(files_for(transcript, default_manifest()), ALL_AUTO, cache)


def test_an_append_walks_only_the_new_messages() -> None:
    transcript = _session()
    cache = _map(transcript, None)
    transcript.append(message("a3", "assistant", "done"))
    resumed = read_transcript({"messages": transcript}, "x", cache.transcript)
    assert resumed.first_changed == 4
    assert resumed.messages[:4] == list(cache.transcript.messages if cache.transcript else ())
    _map(transcript, cache)


def test_a_result_for_an_earlier_call_restarts_the_fold_at_that_call() -> None:
    transcript = _session()
    cache = _map(transcript, None)
    first, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO, cache)
    transcript.append(message("r2", "user", [answer("c2", [item("pwd", "/")])]))
    resumed = read_transcript({"messages": transcript}, "x", cache.transcript)
    assert resumed.first_changed == 3  # a2, whose call c2 got its result
    second, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO, cache)
    assert len(second.steps) == len(first.steps) == 4  # the prompt, a1's text and call, a2's call
    assert all(new is old for new, old in zip(second.steps[:3], first.steps[:3], strict=True))
    assert second.steps[3] is not first.steps[3]
    assert second.steps[3].record["payload"]["stdout"] == "/"
    _map(transcript, cache)


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda t: t.__setitem__(2, message("r1", "user", [answer("c1", [item("ls", "changed")])])),
        lambda t: t.__delitem__(3),
        lambda t: t.insert(1, message("a0", "assistant", "inserted")),
        lambda t: t.__setitem__(3, {**t[3], "ts": 1}),
    ],
)
def test_any_other_change_is_a_full_pass(rewrite: Any) -> None:
    transcript = _session()
    cache = _map(transcript, None)
    rewrite(transcript)
    transcript.append(message("a9", "assistant", "more"))
    assert read_transcript({"messages": transcript}, "x", cache.transcript).first_changed == 0
    _map(transcript, cache)


def test_a_failed_pass_leaves_the_cache_as_it_was() -> None:
    transcript = _session()
    cache = _map(transcript, None)
    broken = [*transcript, message("r2", "user", [answer("c2", "x"), "not a block"])]
    with pytest.raises(SourceError, match="wrong shape"):
        map_session(files_for(broken, default_manifest()), ALL_AUTO, cache)
    transcript.append(message("r2", "user", [answer("c2", [item("pwd", "/")])]))
    _map(transcript, cache)


def test_skipped_messages_are_checked_too() -> None:
    transcript = [*_session(), {"role": "system", "content": "note"}]
    cache = _map(transcript, None)
    transcript[4] = {"role": "user", "content": "now a prompt"}
    assert read_transcript({"messages": transcript}, "x", cache.transcript).first_changed == 0
    _map(transcript, cache)


def test_a_skipped_message_too_deep_to_fingerprint_is_skipped_and_never_resumed_over() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    transcript = [*_session(), {"role": "system", "content": deep}]
    cache = _map(transcript, None)
    transcript.append(message("a3", "assistant", "done"))
    assert read_transcript({"messages": transcript}, "x", cache.transcript).first_changed == 0
    cached, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO, cache)
    fresh, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO)
    assert same_mapping(cached, fresh)


def test_an_append_gathers_the_step_ids_of_the_new_rows_only() -> None:
    transcript = _session()
    cache = _map(transcript, None)
    assert cache.turn_steps is not None
    before = cache.turn_steps.rows
    transcript.append(message("a3", "assistant", "done"))
    after = _map(transcript, cache).turn_steps
    assert after is not None
    assert after.rows[: len(before)] == before  # the same rows, the fold reused them
    assert all(new is old for new, old in zip(after.rows, before, strict=False))
    assert after.step_ids["turn:1"][-1] == after.rows[-1].id


def test_an_append_hands_back_the_turns_it_did_not_touch_as_the_very_same_records() -> None:
    # The validation and the store's write find an unchanged turn by identity: a long session's
    # re-ingest then serializes and hashes only the turn its new message joined.
    transcript = [*_session(), prompt("u2", "and now"), message("a3", "assistant", "on it")]
    cache = _map(transcript, None)
    first, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO, cache)
    cache = _map(transcript, cache)
    transcript.append(message("a4", "assistant", "done"))
    second, _ = map_session(files_for(transcript, default_manifest()), ALL_AUTO, cache)
    assert [turn["id"] for turn in second.turns] == ["turn:1", "turn:2"]
    assert second.turns[0] is first.turns[0]
    assert second.turns[1] is not first.turns[1]
    assert second.turns[1]["step_ids"] == [*first.turns[1]["step_ids"], second.steps[-1].id]
    assert first.turns[1]["step_ids"] == [row.id for row in first.steps if row.record["turn_id"] == "turn:2"]
    _map(transcript, cache)  # and the same as a fresh mapping
