"""The redactor: every secret masked, home shown as ~, and a list of what was masked."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from postrun.review.redact import Redactor
from tests.support.secret_samples import SAMPLES


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_kind_is_masked(kind: str) -> None:
    secret, text = SAMPLES[kind]
    redactor = Redactor()
    out = redactor.text(text, "step #3 x.payload.stdout")
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    ((masked),) = redactor.masked
    assert (masked.kind, masked.where) == (kind, "step #3 x.payload.stdout")
    assert f"[REDACTED:{kind}]" in masked.context and secret not in masked.context


def test_home_is_shown_as_tilde_only_at_a_path_boundary() -> None:
    redactor = Redactor(home="/home/dev")
    assert redactor.text("/home/dev/p/x and /home/dev and /home/devon/x", "t") == "~/p/x and ~ and /home/devon/x"
    assert redactor.masked == []
    assert Redactor(home="/").text("/etc/x", "t") == "/etc/x"


def test_envelope_keeps_its_shape_and_names_where() -> None:
    token = SAMPLES["github_token"][0]
    envelope = {
        "schema_version": "1.2",
        "session": {"id": "s", "workspace": {"root": "/home/dev/p"}},
        "segments": [],
        "actors": [],
        "turns": [{"id": "turn:1", "step_ids": ["a"]}],
        "steps": [{"id": "a", "seq": 0, "payload": {"command": "gh auth token", "stdout": token}, "flags": []}],
    }
    redactor = Redactor(home="/home/dev")
    out = redactor.envelope(envelope)
    assert out["session"]["workspace"]["root"] == "~/p"
    assert out["steps"][0]["payload"]["stdout"] == "[REDACTED:github_token]"
    assert out["turns"] == envelope["turns"]
    assert [m.where for m in redactor.masked] == ["step #0 a.payload.stdout"]
    assert envelope["steps"][0]["payload"]["stdout"] == token  # the input is left as it was


def test_dataclass_fields() -> None:
    @dataclass(frozen=True)
    class Details:
        title: str
        count: int

    out = Redactor().dataclass(Details(f"use {SAMPLES['openai_key'][0]}", 3), "session")
    assert out == Details("use [REDACTED:openai_key]", 3)


def test_a_search_snippet_is_masked_where_its_window_cuts_a_secret() -> None:
    token = SAMPLES["github_token"][0]
    source = [f"line one\nexport GITHUB_TOKEN={token}\n  and the next line"]
    redactor = Redactor(home="/home/dev")
    # FTS5 cuts a window of whole tokens: here in the middle of the secret, with a match marked inside it.
    cut = f"…{token[:6]}»{token[6:12]}«{token[12:20]}…"
    assert redactor.snippet(cut, source, 4096, "step #1 x") == "…[REDACTED:github_token]…"
    tail = f"…{token[20:]} and the »next« line"
    assert redactor.snippet(tail, source, 4096, "step #1 x") == "…[REDACTED:github_token] and the »next« line"
    assert [(m.kind, m.where) for m in redactor.masked] == [("github_token", "step #1 x")] * 2
    clean = Redactor(home="/home/dev")
    assert clean.snippet("»line« one export", source, 4096, "s") == "»line« one export" and clean.masked == []
    assert clean.snippet("cd /home/dev/»app«", ["cd /home/dev/app"], 4096, "s") == "cd ~/»app«"
    # A window not found in the source (it should always be) is masked as plain text.
    assert token not in clean.snippet(f"»{token}«", ["other"], 4096, "s")


def test_a_search_snippet_is_masked_where_the_index_cut_a_field_inside_a_secret() -> None:
    """The index holds each field's first 4,096 characters: a secret the cut leaves a piece of
    is found in the whole field."""
    token = SAMPLES["github_token"][0]
    stdout = "x" * 4070 + f" GITHUB_TOKEN {token} done"
    piece = stdout[:4096].rsplit(" ", 1)[1]  # what the index holds of the token
    assert token.startswith(piece) and len(piece) > 8
    redactor = Redactor()
    shown = redactor.snippet(f"…xxxx »GITHUB_TOKEN« {piece}", ["echo", stdout], 4096, "step #1 x")
    assert shown == "…xxxx »GITHUB_TOKEN« [REDACTED:github_token]"


def test_a_secret_a_list_of_lines_splits_is_masked_in_every_line() -> None:
    """A patch's lines (Claude Code's ``structured_patch``): a private key spans several."""
    key = SAMPLES["private_key"][0]
    lines = ["@@ -1 +1,8 @@", *(f"+{line}" for line in f"const testKey = `{key}`;".splitlines()), " done"]
    redactor = Redactor()
    out = redactor.value({"structured_patch": [{"lines": lines}]}, "step")
    shown = out["structured_patch"][0]["lines"]
    assert len(shown) == len(lines) and shown[0] == lines[0] and shown[-1] == lines[-1]
    assert not any(part in "\n".join(shown) for part in key.splitlines()[1:-1])  # the body too, not only BEGIN
    assert shown[1] == "+const testKey = `[REDACTED:private_key]"
    assert [masked.kind for masked in redactor.masked] == ["private_key"]


def test_a_secret_its_key_and_value_hold_together_is_masked_where_it_is() -> None:
    """A tool's arguments as a structure: ``password`` and its value are two strings, neither a
    secret alone; only the strings the secret covers change (not an id that holds the same
    characters), and keys that are secrets stay apart."""
    stripe = SAMPLES["stripe_key"][0]
    arguments = {
        "host": "db.internal",
        "password": 'Xk9#05"Ub325JDm!v',  # a quote inside: escaped in the JSON text
        "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKX",
        "db_password": "Summer2026x",
        "api_token": "Summer2026x-Zx9kP2mQ7vR4tY8w",
        stripe: 1,
        stripe[:-1] + "Q": 2,
    }
    step = {"id": "call_Summer2026x", "payload": {"raw": {"arguments": arguments}}}
    redactor = Redactor()
    out = redactor.value(step, "step #1 a")
    assert out["id"] == "call_Summer2026x"
    assert out["payload"]["raw"]["arguments"] == {
        "host": "db.internal",
        "password": "[REDACTED:credential]",
        "aws_secret_access_key": "[REDACTED:aws_key]",
        "db_password": "[REDACTED:credential]",
        "api_token": "[REDACTED:credential]",
        "[REDACTED:stripe_key]": 1,
        "[REDACTED:stripe_key] #2": 2,
    }
    shown = " ".join(masked.context for masked in redactor.masked)
    assert "Xk9#" not in shown and "Summer" not in shown and stripe[8:] not in shown and "wJalr" not in shown


def test_a_match_running_past_a_value_changes_no_other_string_or_key() -> None:
    """The pair's JSON text holds syntax a rule's match may run on into (a quoted value that
    never closes, ``npm_.+``): only a secret inside the value counts, the record keeps its shape."""
    payload = {
        "command": 'grep -rn "password=\'" src/',
        "cwd": "/w",
        "exit_code": 0,
        "stdout": "src/a.py:3: password = os.environ['PW']\n//registry.npmjs.org/:_authToken=npm_\n",
    }
    step = {"id": "a", "seq": 3, "session_id": "s", "turn_id": "t", "type": "command", "payload": payload}
    out = Redactor().value(step, "step #3 a")
    assert list(out) == list(step) and list(out["payload"]) == list(payload)
    assert out["seq"] == 3 and out["turn_id"] == "t" and out["payload"]["exit_code"] == 0


def test_a_secret_beside_its_key_is_masked_though_its_string_held_another() -> None:
    out = Redactor().value({"cfg": {"password": "Zx9kP2mQ7vR4 token=Ab3dEf6hIj9k"}}, "s")
    assert "Zx9kP2mQ7vR4" not in str(out) and "Ab3dEf6hIj9k" not in str(out)


def test_a_secret_a_pair_gives_away_is_masked_where_it_stands_as_a_word() -> None:
    record = {
        "id": "call_Zx9kP2mQ7vR4tY8w_1",  # not a word of its own: left as it is
        "raw": {"input": {"api_key": "Zx9kP2mQ7vR4tY8w"}, "result": "using key Zx9kP2mQ7vR4tY8w."},
    }
    out = Redactor().value(record, "s")
    assert out["raw"] == {"input": {"api_key": "[REDACTED:credential]"}, "result": "using key [REDACTED:credential]."}
    assert out["id"] == record["id"]
