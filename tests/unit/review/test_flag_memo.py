"""The flags of a live session's re-ingest: rows remembered by the memo, the output unchanged."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import postrun.review.apply
from postrun.records import MappedSession, StepRow
from postrun.review.apply import FlagMemo, flag_session
from tests.unit.cline.kit import T0, answer, call, mapped_session, message, prompt


def session(command: str) -> MappedSession:
    result = [{"query": command, "result": "", "success": True}]
    return mapped_session(
        [
            prompt("u1", "clean up"),
            message("a1", "assistant", [call("c1", "run_commands", {"commands": [command]})], ts=T0 + 1000),
            message("r1", "user", [answer("c1", result, name="run_commands")], ts=T0 + 2000),
            message("a2", "assistant", [{"type": "text", "text": "done"}], ts=T0 + 3000),
        ]
    )


def blobs(mapped: MappedSession) -> list[bytes]:
    return [row.blob for row in mapped.steps]


def test_a_re_ingest_hands_back_the_rows_already_flagged_as_they_were() -> None:
    mapped = session("sudo rm -rf /var")
    memo = FlagMemo()
    first = flag_session(mapped, memo)
    again = flag_session(mapped, memo)
    assert blobs(again) == blobs(first) == blobs(flag_session(mapped))
    assert any(row.record["flags"] for row in first.steps)  # the command is flagged
    # Nothing flagged or serialized again: the very rows of the first pass.
    assert all(now is before for now, before in zip(again.steps, first.steps, strict=True))


def test_a_step_that_changed_is_flagged_again() -> None:
    memo = FlagMemo()
    flag_session(session("sudo rm -rf /var"), memo)
    changed = session("ls")
    assert blobs(flag_session(changed, memo)) == blobs(flag_session(changed))
    assert not any(row.record["flags"] for row in flag_session(changed, memo).steps)


def test_a_read_is_remembered_with_its_text_and_the_text_goes_no_further() -> None:
    token = "ghp_" + "A1b2C3d4" * 4 + "Zz9Y"
    result = [{"query": "/home/dev/app/.env", "result": f"GH_TOKEN={token}\n", "success": True}]
    mapped = mapped_session(
        [
            prompt("u1", "look"),
            message(
                "a1", "assistant", [call("c1", "read_files", {"files": [{"path": "/home/dev/app/.env"}]})], ts=T0 + 1000
            ),
            message("r1", "user", [answer("c1", result, name="read_files")], ts=T0 + 2000),
        ]
    )
    memo = FlagMemo()
    flagged = flag_session(mapped, memo)
    assert flagged.read_texts == {}  # the flags took what they needed; nothing else holds the text
    (read,) = [row.record for row in flagged.steps if row.id == "c1#0"]
    assert [flag["kind"] for flag in read["flags"]] == ["sensitive_read", "secret_in_output"]
    assert token not in str(read["flags"])
    # The same step with another text: the memo does not hand back the first one's flags.
    other = flag_session(replace(mapped, read_texts={"c1#0": "DEBUG=1"}), memo)
    (read,) = [row.record for row in other.steps if row.id == "c1#0"]
    assert [flag["kind"] for flag in read["flags"]] == ["sensitive_read"]


def flags_computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the steps whose flags the rules computed."""
    computed: list[str] = []
    real = postrun.review.apply.step_flags

    def counting(record: dict[str, Any], *args: Any) -> list[dict[str, Any]]:
        computed.append(str(record["id"]))
        return real(record, *args)

    monkeypatch.setattr(postrun.review.apply, "step_flags", counting)
    return computed


def test_an_append_flags_the_new_steps_only(monkeypatch: pytest.MonkeyPatch) -> None:
    mapped = session("sudo rm -rf /var")
    memo = FlagMemo()
    first = flag_session(mapped, memo)
    last = mapped.steps[-1].record
    extra = {**last, "id": "a3#0", "seq": last["seq"] + 1, "payload": {"role": "assistant", "text": "more"}}
    grown = replace(mapped, steps=[*mapped.steps, StepRow.build(extra)])
    computed = flags_computed(monkeypatch)
    again = flag_session(grown, memo)
    assert computed == [grown.steps[-1].id]
    assert all(now is before for now, before in zip(again.steps, first.steps, strict=False))
    assert blobs(again) == blobs(flag_session(grown))


def test_a_step_read_again_with_another_text_is_flagged_again(monkeypatch: pytest.MonkeyPatch) -> None:
    result = [{"query": "/home/dev/app/.env", "result": "DEBUG=1\n", "success": True}]
    mapped = mapped_session(
        [
            prompt("u1", "look"),
            message(
                "a1", "assistant", [call("c1", "read_files", {"files": [{"path": "/home/dev/app/.env"}]})], ts=T0 + 1000
            ),
            message("r1", "user", [answer("c1", result, name="read_files")], ts=T0 + 2000),
        ]
    )
    memo = FlagMemo()
    flag_session(mapped, memo)
    token = "ghp_" + "A1b2C3d4" * 4 + "Zz9Y"
    computed = flags_computed(monkeypatch)
    other = flag_session(replace(mapped, read_texts={"c1#0": f"GH_TOKEN={token}"}), memo)
    assert "c1#0" in computed
    (read,) = [row.record for row in other.steps if row.id == "c1#0"]
    assert [flag["kind"] for flag in read["flags"]] == ["sensitive_read", "secret_in_output"]


def test_a_step_re_made_at_the_end_is_flagged_again_and_the_rest_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    mapped = session("sudo rm -rf /var")
    memo = FlagMemo()
    first = flag_session(mapped, memo)
    last = mapped.steps[-1].record
    remade = StepRow.build({**last, "payload": {"role": "assistant", "text": "done: sudo rm -rf /var"}})
    changed = replace(mapped, steps=[*mapped.steps[:-1], remade])
    computed = flags_computed(monkeypatch)
    again = flag_session(changed, memo)
    assert computed == [remade.id]
    assert all(now is before for now, before in zip(again.steps[:-1], first.steps[:-1], strict=True))
    assert blobs(again) == blobs(flag_session(changed))
    # And on from there: the next pass hands back this one's rows, the re-made one's included.
    assert all(now is before for now, before in zip(flag_session(changed, memo).steps, again.steps, strict=True))


def test_passes_that_go_on_from_a_re_made_end_keep_the_memo_to_their_own_rows() -> None:
    mapped = session("sudo rm -rf /var")
    memo = FlagMemo()
    flag_session(mapped, memo)
    last = mapped.steps[-1].record
    for k in range(5):
        remade = StepRow.build({**last, "payload": {"role": "assistant", "text": f"done {k}"}})
        flag_session(replace(mapped, steps=[*mapped.steps[:-1], remade]), memo)
    kept = memo.take(mapped.id)
    assert kept is not None and len(kept.by_key) == len(mapped.steps)
