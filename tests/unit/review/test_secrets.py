"""The secret rules: one hit per kind, near-misses, and the copy of detect-secrets' rules."""

from __future__ import annotations

import importlib
import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postrun.review.secrets import (
    DETECT_SECRETS_PATTERNS,
    DETECT_SECRETS_VERSION,
    find_secrets,
    json_may_hold_secrets,
    mask,
    may_hold_secrets,
    rules,
)
from tests.support.secret_samples import SAMPLES


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_kind_is_found_whole(kind: str) -> None:
    secret, text = SAMPLES[kind]
    found = find_secrets(text)
    assert [(s.kind, s.value) for s in found] == [(kind, secret)]
    assert text[found[0].start : found[0].end] == secret


def test_every_kind_has_a_sample() -> None:
    assert {rule.kind for rule in rules()} == set(SAMPLES) | {"sendgrid_key", "square_secret", "azure_storage_key"}


@pytest.mark.parametrize(
    "text",
    [
        "task-abcdefghij0123456789klmnopqrstuvwxyz",  # `sk-` inside a word
        "disk-usage-report-2026-abcdefghijklmnop",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a random-looking hash
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "password=changeme",
        "PASSWORD=${DB_PASSWORD}",
        "api_key: process.env.OPENAI_API_KEY",
        "token = self.token",
        "token=token",
        "max_tokens: 100000",
        "secret: <your-secret-here>",
        "password: [REDACTED:credential]",
        "PWD=/home/dev/project",
        "https://user@example.com/x",
        "git@github.com:org/repo.git",
        "Authorization: Bearer $TOKEN",
        "hf_hub_download_and_cache_the_model_weights",
        "ghp_short",
        "see the private key docs",
    ],
)
def test_near_misses_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_overlapping_matches_keep_the_more_specific_rule() -> None:
    token = SAMPLES["github_token"][0]
    (found,) = find_secrets(f"GITHUB_TOKEN={token}")
    assert found.kind == "github_token"


def test_several_secrets_in_order() -> None:
    text = f"{SAMPLES['aws_key'][1]}\n{SAMPLES['openai_key'][1]}\n{SAMPLES['github_token'][1]}"
    assert [s.kind for s in find_secrets(text)] == ["aws_key", "openai_key", "github_token"]


def test_positions_survive_text_that_lower_cases_longer() -> None:
    token = SAMPLES["github_token"][0]
    text = f"İİİ {token}"  # 'İ'.lower() is two characters
    (found,) = find_secrets(text)
    assert text[found.start : found.end] == token


def test_mask_shows_only_the_public_prefix_and_length() -> None:
    assert mask("ghp_secretsecret", 4) == "ghp_…(16 chars)"
    assert mask("hunter2") == "…(7 chars)"


def test_copied_rules_are_detect_secrets_own() -> None:
    """The copied patterns are those of the installed detect-secrets (a test dependency)."""
    plugins = importlib.import_module("detect_secrets.core.plugins.util").get_mapping_from_secret_type_to_class()
    by_name = {cls.__name__: cls for cls in plugins.values()}
    assert importlib.metadata.version("detect-secrets") == DETECT_SECRETS_VERSION
    for name, patterns in DETECT_SECRETS_PATTERNS.items():
        shipped = [(p.pattern, p.flags & ~re.UNICODE) for p in by_name[name]().denylist]
        assert shipped == list(patterns), name


_PIECES = [text for _, text in SAMPLES.values()] + ["Token=", "PASSW", "K", "İ", "ſ", "Σ", "\ud800", " ", "-", "ey"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES) | st.text(max_size=12), max_size=6).map("".join), max_size=4))
def test_the_quick_look_never_misses_text_a_rule_matches(texts: list[str]) -> None:
    # Flags look at all of a step's texts joined once, and skip the rules when nothing is there.
    if any(find_secrets(text) for text in texts):
        assert may_hold_secrets("\n".join(texts))
    assert not may_hold_secrets("plain build output\n" * 200)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES) | st.text(max_size=12), max_size=6).map("".join), max_size=4))
def test_the_look_at_a_whole_json_document_never_misses_what_the_look_at_its_strings_sees(texts: list[str]) -> None:
    texts = [text for text in texts if "\ud800" not in text]  # not JSON: no record holds one
    document = {"payload": {"text": texts[0] if texts else "", "raw": {"Key": texts[1:]}}, "turn_id": "turn:1"}
    if may_hold_secrets("\n".join(texts)):
        assert json_may_hold_secrets(orjson.dumps(document))
    assert not json_may_hold_secrets(orjson.dumps({"stdout": "plain build output\n" * 200}))
