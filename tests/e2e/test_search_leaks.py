"""A search hit's snippet, cut from a step's text, masks what a redacted export of the step masks:
`postrun search --redact` through the real process and `postrun mcp`'s search through the MCP
SDK's own client, over a store the real `postrun ingest` built; and what a redacted export lists
as masked quotes no secret."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import run_postrun
from tests.support.claude_lines import Transcript
from tests.support.recall import mcp_client
from tests.support.secret_samples import SAMPLES

KEY = "q8Zr4Lm2Xw9Tk3Vb7NpYt5"  # an invented API key: only the key beside it says it is one
SESSION = "dddd0000-0000-4000-8000-000000000004"


def _stored(env: dict[str, str], tmp_path: Path, tool_input: dict[str, Any], result: str) -> None:
    """A Claude Code session of one MCP tool call, ingested."""
    transcript = Transcript(SESSION, "/srv/app")
    transcript.prompt("look up the weather")
    transcript.call("msg_1", "toolu_w", "mcp__weather__lookup", tool_input)
    transcript.result("toolu_w", result)
    transcript.text("msg_2", "done")
    projects = tmp_path / "projects"
    transcript.write(projects / "-srv-app" / f"{SESSION}.jsonl")
    done = run_postrun("ingest", "--agent", "claude-code", str(projects), env=env)
    assert done.returncode == 0, done.stderr


def _pieces(secret: str, size: int = 6) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def test_a_search_without_words_quotes_a_secret_beside_its_key_only_masked(env: dict[str, str], tmp_path: Path) -> None:
    # README: `search --redact` shows the hits as a shared export would, "a secret the window cuts
    # is masked too". Without words a hit's snippet is the start of the step's text, cut at 160
    # characters (here it would fall inside the key: the tool's input, its keys sorted: a_note,
    # then api_key), but for a flagged step's reasons: the key beside `api_key` is flagged, as
    # the redactor masks it, and its reason quotes it masked, with or without --redact.
    _stored(env, tmp_path, {"a_note": "x" * 96, "api_key": KEY}, "sunny")
    for search in (("--type", "other"), ("--since", "2020-01-01"), ("--agent", "claude-code")):
        for extra in ((), ("--json",), ("--redact",), ("--redact", "--json")):
            done = run_postrun("search", *search, *extra, env=env)
            assert done.returncode == 0 and "toolu_w" in done.stdout, done.stderr
            assert not [piece for piece in _pieces(KEY) if piece in done.stdout], (search, done.stdout)
            assert "in raw.input.api_key: …(22 chars)" in done.stdout, (search, done.stdout)


def test_a_secret_its_key_gives_away_is_masked_where_a_snippet_shows_it_again(
    env: dict[str, str], tmp_path: Path
) -> None:
    # README: "a secret a key gives away is masked where it stands as a word elsewhere in the same
    # record too", by every redacted way out: here the tool's result repeats the key it was given.
    _stored(env, tmp_path, {"api_key": KEY, "city": "Oslo"}, f"sunny in Oslo; key {KEY} accepted")
    exported = run_postrun("export", SESSION, "--redact", env=env)
    assert exported.returncode == 0 and KEY not in exported.stdout  # what a redacted export shows
    assert KEY in run_postrun("search", "sunny", env=env).stdout  # without --redact, for you alone
    for words in ("sunny", "accepted", "Oslo"):
        for extra in ((), ("--json",)):
            done = run_postrun("search", words, "--redact", *extra, env=env)
            assert done.returncode == 0 and "toolu_w" in done.stdout, done.stderr
            assert not [piece for piece in _pieces(KEY) if piece in done.stdout], (words, done.stdout)
            assert "[REDACTED:credential]" in done.stdout
    with mcp_client(env, sys.stderr) as client:
        answers = [client.data("search", query=words, include_active=True) for words in ("sunny", "accepted")]
    shown = json.dumps(answers)
    assert all(answer["hits"] for answer in answers), shown
    assert not [piece for piece in _pieces(KEY) if piece in shown], shown


def test_a_redacted_exports_list_of_what_it_masked_quotes_no_secret(env: dict[str, str], tmp_path: Path) -> None:
    # README: "A redacted export lists on stderr what it masked, so you can check before sharing"
    # (a CI log keeps it): a token used as a key names where a secret under it was masked.
    github, aws = SAMPLES["github_token"][0], SAMPLES["aws_key"][0]
    _stored(env, tmp_path, {"tokens": {github: f"aws {aws}"}}, "stored")
    for args in (("-f", "markdown"), ("-f", "html"), ("-f", "json", "--redact"), ("-f", "jsonl", "--redact")):
        done = run_postrun("export", SESSION, *args, "-o", str(tmp_path / "shared"), env=env)
        assert done.returncode == 0, done.stderr
        assert "masked aws_key in step #1 toolu_w.payload.raw.input.tokens.[REDACTED:github_token]" in done.stderr
        shared = (tmp_path / "shared").read_text()
        for secret in (github, aws):
            assert secret not in done.stderr and secret not in shared, (args, done.stderr)


def test_search_by_flag_finds_a_secret_the_redactor_masks_beside_its_key_or_as_a_key(
    env: dict[str, str], tmp_path: Path
) -> None:
    # README: `search --flag secret_in_output` lists the steps with a secret, and the flags and
    # the one redactor look alike ("a value beside its key (a `password` in a tool's arguments,
    # as `{"password": "…"}`)", a token used as a key): what an export masks is flagged.
    github = SAMPLES["github_token"][0]
    _stored(env, tmp_path, {"password": KEY, "grants": {github: "repo"}}, "ok")
    exported = run_postrun("export", SESSION, "--redact", env=env)
    assert KEY not in exported.stdout and github not in exported.stdout, exported.stderr
    for flag in ("secret_in_output", "any"):
        done = run_postrun("search", "--flag", flag, env=env)
        assert done.returncode == 0 and "toolu_w" in done.stdout, (flag, done.stdout, done.stderr)
        assert "credential assignment (postrun) in raw.input.password" in done.stdout, done.stdout
        assert "GitHub token (detect-secrets GitHubTokenDetector) in raw.input.grants" in done.stdout, done.stdout
        assert KEY not in done.stdout and github not in done.stdout
