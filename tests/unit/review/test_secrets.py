"""The secret rules: one hit per kind, near-misses, and the copy of detect-secrets' rules."""

from __future__ import annotations

import contextlib
import importlib
import re
import signal
from collections.abc import Iterator

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postrun.review.redact import Redactor
from postrun.review.secret_patterns import (
    DETECT_SECRETS_KEYWORDS,
    DETECT_SECRETS_PATTERNS,
    DETECT_SECRETS_VERSION,
    LEFT_OUT,
)
from postrun.review.secrets import (
    find_secrets,
    json_may_hold_secrets,
    mask,
    may_hold_secrets,
    rules,
)
from tests.support.secret_corpus import BENIGN, SECRETS, SecretCase
from tests.support.secret_samples import SAMPLES

CORPUS_TARGETS = {"secrets": (52, 50 / 52), "benign": (44, 1)}  # at least N cases; caught share, flagged at most


def _covered(case: SecretCase) -> bool:
    """The secret is found and every character of it is inside a match: a mask hides it whole."""
    found = find_secrets(case.text)
    position = case.text.index(case.secret)
    covered = {index for secret in found for index in range(secret.start, secret.end)}
    return set(range(position, position + len(case.secret))) <= covered


@pytest.mark.parametrize("case", SECRETS, ids=[case.name for case in SECRETS])
def test_every_format_is_found_and_covered_whole(case: SecretCase) -> None:
    assert _covered(case), [(s.kind, s.value) for s in find_secrets(case.text)]


@pytest.mark.parametrize(("name", "text"), BENIGN, ids=[name for name, _ in BENIGN])
def test_a_benign_string_is_no_secret(name: str, text: str) -> None:
    assert find_secrets(text) == []


def test_the_corpus_meets_the_targets() -> None:
    least, share = CORPUS_TARGETS["secrets"]
    caught = sum(_covered(case) for case in SECRETS)
    assert len(SECRETS) >= least and caught / len(SECRETS) >= share, f"{caught} of {len(SECRETS)} caught whole"
    least, most = CORPUS_TARGETS["benign"]
    flagged = [name for name, text in BENIGN if find_secrets(text)]
    assert len(BENIGN) >= least and len(flagged) <= most, flagged


def test_every_rule_kind_has_a_case() -> None:
    found = {secret.kind for case in SECRETS for secret in find_secrets(case.text)}
    assert found == {rule.kind for rule in rules()}


def test_the_copied_samples_are_still_found_whole() -> None:
    for kind, (secret, text) in SAMPLES.items():
        assert [(s.kind, s.value) for s in find_secrets(text)] == [(kind, secret)]


@pytest.mark.parametrize(
    "text",
    [
        "task-abcdefghij0123456789klmnopqrstuvwxyz",  # `sk-` inside a word
        "release-sk-2026-abcdefghijklmnopqrstuvwxyz",  # a bare `sk-` after `-`: a name
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


@pytest.mark.parametrize(
    ("kind", "template"),
    [
        ("github_token", "git push origin fix-{s}"),  # a branch named after the leaked token
        ("github_token", "LEAKED_{s}"),
        ("aws_key", "fix-{s}-leak"),
        ("stripe_key", "old-{s}"),
        ("anthropic_key", "KEY_{s}"),
        ("huggingface_token", "cache-{s}"),
    ],
)
def test_a_token_right_after_a_dash_or_underscore_is_found_whole(kind: str, template: str) -> None:
    secret = SAMPLES[kind][0]
    text = template.format(s=secret)
    assert [(s.kind, text[s.start : s.end]) for s in find_secrets(text)] == [(kind, secret)]
    assert secret not in Redactor().text(text, "a command")


def test_an_openai_key_glued_to_a_name_is_found_by_its_marker() -> None:
    (case,) = [case for case in SECRETS if case.name == "OpenAI legacy key"]
    text = f"OPENAI_{case.secret}"
    assert [(s.kind, text[s.start : s.end]) for s in find_secrets(text)] == [("openai_key", case.secret)]


@pytest.mark.parametrize(
    "text",
    [
        "def get_github_pat_from_environment_variable():",
        "def test_ghp_tokens_are_masked_in_the_command_output():",
        "git checkout -b fix-ghp_token_redaction_in_the_export_command",
        "y_sk_test_predictions = model.predict(x)",
        "cp deploy.yaml old-rk_prod_deployment.yaml",
        "pytest -k run_sk_test_classification",
        "my-sk-proj-2026-01-planning-document",
        "data-glc_reports/2026/january/summary/output.csv",
    ],
)
def test_a_prefix_glued_to_a_name_without_digits_after_it_is_a_name(text: str) -> None:
    assert find_secrets(text) == []


def test_a_jwt_whose_signature_holds_a_tokens_prefix_is_masked_whole() -> None:
    jwt = SAMPLES["jwt"][0]
    signed = f"{jwt}_ghp_{'Ab1' * 12}"  # the signature goes on with `_ghp_` and a token's shape
    (found,) = find_secrets(f"cookie: {signed}; Path=/")
    assert (found.kind, found.value) == ("jwt", signed)


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


@pytest.mark.parametrize("case", SECRETS, ids=[case.name for case in SECRETS])
def test_a_mask_shows_no_character_of_the_secret_but_a_public_prefix(case: SecretCase) -> None:
    """What a flag's reason shows of a secret is a prefix every such token has (one of its
    rule's keywords, or a longer form of one), never characters of the secret itself."""
    for secret in find_secrets(case.text):
        shown = secret.value[: secret.rule.keep].lower()
        keywords = [keyword.lower() for keyword in secret.rule.keywords]
        assert not shown or any(k.startswith(shown) or shown.startswith(k) for k in keywords), secret.masked


def test_no_rule_scans_the_rest_of_a_line_unbounded() -> None:
    """A rule tried at each of its keyword's places must not scan lazily to the line's end from
    each: a keyword thousands of times on one long line (minified output) made it quadratic
    (`curl` 20,000 times on a 1 MB line took minutes). Such a scan is bounded (``{0,400}?``)."""
    unbounded = re.compile(r"\[\^[^\]]*\][*+]\?")
    assert [rule.kind for rule in rules() if unbounded.search(rule.pattern.pattern)] == []


class _Hung(Exception):
    pass


@contextlib.contextmanager
def _ends_within(seconds: float) -> Iterator[None]:
    """A hang guard, not a speed figure: the scans below take milliseconds, and took minutes or
    hours before their fixes (backtracking); the regex engine checks for signals as it runs, so
    the alarm ends a scan that backtracks instead of leaving the test hanging."""

    def hung(signum: int, frame: object) -> None:
        raise _Hung(f"not done within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", ["token", "API Key", "password"])
@pytest.mark.parametrize(
    "blanks", [" " * 2000 + "\n", "\t" * 2000, " " * 1000 + "\t" * 1000], ids=["spaces", "tabs", "both"]
)
def test_blanks_after_a_credential_name_cost_no_more_than_reading_them(name: str, blanks: str) -> None:
    """A name followed by a long run of blanks and no value (a padded terminal line): the blanks
    around an assignment's operator were split every way (600 blanks: seconds, 2,000: minutes)."""
    with _ends_within(10):
        assert find_secrets(name + blanks) == []


@pytest.mark.parametrize(
    "text",
    ["htpasswd -" + "b" * 40_000, "htpasswd -a" + " -b" * 15_000 + '"', "mysql" + "-a" * 1_200_000],
    ids=["htpasswd, one long flag", "htpasswd, many flags", "mysql, a long hyphenated word"],
)
def test_a_long_word_after_a_program_costs_no_more_than_reading_it(text: str) -> None:
    """The command-line password rules split a program's flags or name one way: a long flag was
    tried at each of its letters, and each place then scanned again (quadratic or worse: these
    took from a minute to hours)."""
    with _ends_within(10):
        assert find_secrets(text) == []


def test_copied_rules_are_detect_secrets_own() -> None:
    """The copied patterns and keywords are those of the installed detect-secrets (a test
    dependency), and each of its plugins is copied or left out with a reason."""
    plugins = importlib.import_module("detect_secrets.core.plugins.util").get_mapping_from_secret_type_to_class()
    by_name = {cls.__name__: cls for cls in plugins.values()}
    assert importlib.metadata.version("detect-secrets") == DETECT_SECRETS_VERSION
    assert set(by_name) == set(DETECT_SECRETS_PATTERNS) | set(LEFT_OUT)
    assert not set(DETECT_SECRETS_PATTERNS) & set(LEFT_OUT)
    for name, patterns in DETECT_SECRETS_PATTERNS.items():
        shipped = [(p.pattern, p.flags & ~re.UNICODE) for p in by_name[name]().denylist]
        assert shipped == list(patterns), name
    assert importlib.import_module("detect_secrets.plugins.keyword").DENYLIST == DETECT_SECRETS_KEYWORDS
    used = {rule.source.removeprefix("detect-secrets ") for rule in rules()}
    assert set(DETECT_SECRETS_PATTERNS) <= used


_PIECES = (
    [text for _, text in SAMPLES.values()]
    + [case.text for case in SECRETS[::3]]
    + ["SKa", "AP1", "Token=", "PASSW", "K", "İ", "ſ", "Σ", "\ud800", " ", "-", "ey"]
)


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


def test_the_quick_look_finds_every_keyword_of_every_rule() -> None:
    for rule in rules():
        for keyword in rule.keywords:
            assert may_hold_secrets(f"... {keyword} ..."), (rule.kind, keyword)
            assert json_may_hold_secrets(orjson.dumps({"text": keyword})), (rule.kind, keyword)


def test_the_quick_look_finds_a_keyword_wherever_it_stands_in_a_long_text() -> None:
    """A long text is looked at piece by piece: a keyword across two pieces, or in the last, is
    found all the same."""
    filler = "plain build output\n" * 600  # about 11 KB: several pieces
    for rule in rules():
        for keyword in rule.keywords:
            for at in (4096 - len(keyword) + 1, 4096 - 1, 8192 - 2, len(filler)):
                text = filler[:at] + keyword + filler[at:]
                assert may_hold_secrets(text), (rule.kind, keyword, at)
