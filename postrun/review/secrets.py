"""Finding secrets in text: detect-secrets' plugin rules plus the formats it lacks.

The token rules of detect-secrets (the maintained rule set) are copied here verbatim
from its plugins' ``denylist``: importing the package costs about 8 MB and 0.25 s in
every capture, so it is a test dependency only, and a unit test fails when an
installed detect-secrets ships different patterns. Its entropy and keyword plugins
are left out: they flag every random hash and every ``password`` word. The formats it
has no plugin for (Anthropic, current OpenAI and Hugging Face keys, Google API keys,
fine-grained GitHub and npm tokens, ``Authorization:`` headers, ``NAME=value``
credentials, whole PEM blocks and JWTs) are Postrun's own.

Each rule has lower-case keywords, all found in one pass (an Aho-Corasick automaton): a
rule's regex runs only where one of its keywords occurs, which keeps a megabyte of output
in the milliseconds. Pure: text in, spans out.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import ahocorasick_rs
import orjson

# Bump when a rule changes: stored sessions are re-flagged under the new rules.
RULES_VERSION = "1"
DETECT_SECRETS_VERSION = "1.5.0"

# (plugin, [(pattern, flags)]) as detect-secrets ships them; re.UNICODE is implied.
DETECT_SECRETS_PATTERNS: dict[str, tuple[tuple[str, int], ...]] = {
    "AWSKeyDetector": (
        (r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", 0),
        (r"""aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\'\"]([0-9a-zA-Z/+]{40})[\'\"]""", re.I),
    ),
    "AzureStorageKeyDetector": ((r"AccountKey=[a-zA-Z0-9+\/=]{88}", 0),),
    "BasicAuthDetector": ((r"://[^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+:([^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+)@", 0),),
    "GitHubTokenDetector": ((r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", 0),),
    "GitLabTokenDetector": (
        (r"(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}(?!\w)", 0),
        (r"GR1348941[A-Za-z0-9_\-]{20,50}(?!\w)", 0),
        (r"glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}(?!\w)", 0),
        (r"glimt-[A-Za-z0-9_\-]{25}(?!\w)", 0),
        (r"glptt-[A-Za-z0-9_\-]{40}(?!\w)", 0),
        (r"glagent-[A-Za-z0-9_\-]{50,1024}(?!\w)", 0),
        (r"gloas-[A-Za-z0-9_\-]{64}(?!\w)", 0),
    ),
    "NpmDetector": ((r"\/\/.+\/:_authToken=\s*((npm_.+)|([A-Fa-f0-9-]{36})).*", 0),),
    "OpenAIDetector": ((r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", 0),),
    "PrivateKeyDetector": (
        (r"BEGIN DSA PRIVATE KEY", 0),
        (r"BEGIN EC PRIVATE KEY", 0),
        (r"BEGIN OPENSSH PRIVATE KEY", 0),
        (r"BEGIN PGP PRIVATE KEY BLOCK", 0),
        (r"BEGIN PRIVATE KEY", 0),
        (r"BEGIN RSA PRIVATE KEY", 0),
        (r"BEGIN SSH2 ENCRYPTED PRIVATE KEY", 0),
        (r"PuTTY-User-Key-File-2", 0),
    ),
    "PypiTokenDetector": (
        (r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", 0),
        (r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}", 0),
    ),
    "SendGridDetector": ((r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}", 0),),
    "SlackDetector": (
        (r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+", re.I),
        (r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+", re.I | re.X),
    ),
    "SquareOAuthDetector": ((r"sq0csp-[0-9A-Za-z\\\-_]{43}", 0),),
    "StripeDetector": ((r"(?:r|s)k_live_[0-9a-zA-Z]{24}", 0),),
}

_START = r"(?<![A-Za-z0-9_-])"  # a token begins a word: no `sk-` inside `task-…`
_END = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True, slots=True)
class SecretRule:
    kind: str  # the `[REDACTED:<kind>]` name
    label: str  # what a person reads in a flag's reason
    source: str  # where the rule comes from
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]  # lower-case; the regex runs only where one occurs
    # True: every match starts with one of the keywords, so the regex is tried only at
    # the keywords' positions; False: the whole text is searched once a keyword occurs.
    anchored: bool = False
    group: int = 0  # the part of the match that is the secret
    keep: int = 0  # leading characters a masked match may show (a public prefix)
    valid: Callable[[str], bool] | None = None  # a check on the secret itself


@dataclass(frozen=True, slots=True)
class Secret:
    rule: SecretRule
    start: int
    end: int
    value: str

    @property
    def kind(self) -> str:
        return self.rule.kind

    @property
    def masked(self) -> str:
        return mask(self.value, self.rule.keep)


def mask(value: str, keep: int = 0) -> str:
    """A secret as a reason may quote it: its public prefix and its length, nothing else."""
    return f"{value[:keep]}…({len(value)} chars)"


def _jwt_valid(token: str) -> bool:
    """detect-secrets' check: header and payload are base64url JSON."""
    for part in token.split(".")[:2]:
        if len(part) % 4 == 1:
            return False
        try:
            orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        except (binascii.Error, ValueError):
            return False
    return True


# Non-secrets that sit where a credential would: placeholders, references, our own masks.
_PLACEHOLDER = re.compile(
    r"""(?ix)^(?:
        [$%].* | <.*> | \{\{.*\}\} | \[redacted.* | \*+ | x{3,} | \.{3,} | ….*
      | changeme | change_me | password | passwd | secret | example\w* | placeholder | dummy | test
      | redacted | null | none | nil | true | false | undefined | (?:your|my)[_-].*
      | (?:process\.env|os\.environ|os\.getenv|getenv|env|settings|config)\b.*
      | [\d.]+                                       # numbers: token counts, limits
      | [A-Za-z_]+                                   # a bare identifier (token=token): code
      | [A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(.*)?     # attribute access or a call
      | [~.]?/.*                                     # a path
    )$"""
)


def _credential_valid(value: str) -> bool:
    return not _PLACEHOLDER.match(value)


def _copied(plugin: str, kind: str, label: str, keywords: tuple[str, ...], **extra: object) -> list[SecretRule]:
    return [
        SecretRule(kind, label, f"detect-secrets {plugin}", re.compile(pattern, flags), keywords, **extra)  # type: ignore[arg-type]
        for pattern, flags in DETECT_SECRETS_PATTERNS[plugin]
    ]


def _own(kind: str, label: str, regex: str, keywords: tuple[str, ...], **extra: object) -> SecretRule:
    return SecretRule(kind, label, "postrun", re.compile(regex), keywords, **extra)  # type: ignore[arg-type]


_CREDENTIAL_NAMES = (
    "secret", "token", "passwd", "password", "passphrase", "pass_phrase", "api_key", "api-key", "apikey",
    "access_key", "access-key", "accesskey", "private_key", "private-key", "secret_key", "secret-key", "secretkey",
    "credential", "credentials",
)  # fmt: skip


@functools.cache
def rules() -> tuple[SecretRule, ...]:
    """Every rule, most specific first: where two matches overlap, the earlier rule wins."""
    pem_headers = "|".join(pattern for pattern, _ in DETECT_SECRETS_PATTERNS["PrivateKeyDetector"])
    names = "|".join(re.escape(name) for name in _CREDENTIAL_NAMES)
    return (
        # detect-secrets finds a key's header line; the whole block is what must be masked.
        _own(
            "private_key",
            "private key",
            rf"(?:-----)?(?:{pem_headers})[\s\S]*?(?:-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----|\Z)",
            ("private key", "putty-user-key"),
        ),
        _own(
            "anthropic_key",
            "Anthropic API key",
            rf"{_START}sk-ant-[A-Za-z0-9_-]{{20,}}",
            ("sk-ant-",),
            anchored=True,
            keep=7,
        ),
        *_copied("OpenAIDetector", "openai_key", "OpenAI API key", ("sk-",), anchored=True, keep=3),
        _own(
            "openai_key",
            "OpenAI API key",
            rf"{_START}sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{{20,}}{_END}",
            ("sk-",),
            anchored=True,
            keep=3,
        ),
        *_copied(
            "AWSKeyDetector",
            "aws_key",
            "AWS key",
            ("akia", "asia", "abia", "acca", "a3t", "aws"),
            anchored=True,
            keep=4,
        ),
        *_copied(
            "GitHubTokenDetector",
            "github_token",
            "GitHub token",
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
            anchored=True,
            keep=4,
        ),
        _own(
            "github_token",
            "GitHub token",
            rf"{_START}github_pat_[A-Za-z0-9_]{{22,}}",
            ("github_pat_",),
            anchored=True,
            keep=11,
        ),
        *_copied(
            "GitLabTokenDetector",
            "gitlab_token",
            "GitLab token",
            (
                "glpat-",
                "gldt-",
                "glft-",
                "glsoat-",
                "glrt-",
                "gr1348941",
                "glcbt-",
                "glimt-",
                "glptt-",
                "glagent-",
                "gloas-",
            ),
            anchored=True,
            keep=5,
        ),
        *_copied("StripeDetector", "stripe_key", "Stripe key", ("sk_live_", "rk_live_"), anchored=True, keep=8),
        _own(
            "stripe_key",
            "Stripe key",
            rf"{_START}[sr]k_test_[0-9a-zA-Z]{{24,}}",
            ("sk_test_", "rk_test_"),
            anchored=True,
            keep=8,
        ),
        *_copied(
            "SlackDetector", "slack_token", "Slack token", ("xox", "https://hooks.slack.com"), anchored=True, keep=4
        ),
        _own("google_api_key", "Google API key", rf"{_START}AIza[0-9A-Za-z_-]{{35}}", ("aiza",), anchored=True, keep=4),
        *_copied("NpmDetector", "npm_token", "npm token", ("_authtoken",), group=1, keep=4),
        _own("npm_token", "npm token", rf"{_START}npm_[A-Za-z0-9]{{36}}{_END}", ("npm_",), anchored=True, keep=4),
        *_copied("PypiTokenDetector", "pypi_token", "PyPI token", ("pypi-ag",), anchored=True, keep=5),
        _own(
            "huggingface_token",
            "Hugging Face token",
            r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{34}(?![A-Za-z0-9])",
            ("hf_",),
            anchored=True,
            keep=3,
        ),
        *_copied("SendGridDetector", "sendgrid_key", "SendGrid key", ("sg.",), anchored=True, keep=3),
        *_copied("SquareOAuthDetector", "square_secret", "Square OAuth secret", ("sq0csp-",), anchored=True, keep=7),
        *_copied("AzureStorageKeyDetector", "azure_storage_key", "Azure storage key", ("accountkey=",), anchored=True),
        # detect-secrets' JWT pattern ends lazily and leaves the signature out; this one takes it.
        _own(
            "jwt",
            "JSON Web Token",
            r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.?[A-Za-z0-9_.+/=-]*",
            ("eyj",),
            anchored=True,
            keep=3,
            valid=_jwt_valid,
        ),
        *_copied("BasicAuthDetector", "url_password", "password in a URL", ("://",), anchored=True, group=1),
        _own(
            "authorization_header",
            "Authorization header",
            r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|bot|digest)\s+)?([A-Za-z0-9._~+/=-]{8,})",
            ("authorization",),
            anchored=True,
            group=1,
        ),
        _own(
            "credential",
            "credential assignment",
            rf"(?i)(?:{names})[\"']?[ \t]*(?::=|=>|=|:)[ \t]*[\"']?([^\s\"'`,;)\]}}]{{6,}})",
            ("secret", "token", "passw", "passphrase", "pass_phrase", "api", "access", "private", "credential"),
            anchored=True,
            group=1,
            valid=_credential_valid,
        ),
    )


@functools.cache
def _keywords() -> tuple[tuple[str, ...], ahocorasick_rs.BytesAhoCorasick]:
    """Every rule's keywords, and one automaton that finds them all in a single pass."""
    keywords = tuple(dict.fromkeys(keyword for rule in rules() for keyword in rule.keywords))
    return keywords, ahocorasick_rs.BytesAhoCorasick([keyword.encode() for keyword in keywords])


@functools.cache
def _any_keyword() -> ahocorasick_rs.BytesAhoCorasick:
    """The same keywords, leftmost-first: it finds a match wherever any keyword occurs, and its
    vectorized search makes a text without one about 14 times cheaper than the overlapping pass."""
    keywords, _ = _keywords()
    return ahocorasick_rs.BytesAhoCorasick(
        [keyword.encode() for keyword in keywords], matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST
    )


def _lowered(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two: positions would drift
        lowered = "".join(char.lower() if len(char.lower()) == 1 else char for char in text)
    return lowered


def may_hold_secrets(text: str) -> bool:
    """False when no rule can match anywhere in ``text`` (no keyword occurs in it).

    Cheap, for many texts joined into one: a keyword in one of them is a keyword in the
    whole (keywords are ASCII, and an ASCII letter lower-cases the same everywhere).
    """
    return bool(_any_keyword().find_matches_as_indexes(text.lower().encode("utf-8", "surrogatepass")))


def json_may_hold_secrets(blob: bytes) -> bool:
    """``may_hold_secrets`` over every string of a JSON document, without decoding it: False
    only when no rule can match in any of them.

    No keyword holds a character JSON escapes, so a keyword in a string is one in the document.
    Only an ASCII document is looked at (lower-cased as bytes): a few other characters
    lower-case into ASCII letters, so any other is True.
    """
    return not blob.isascii() or bool(_any_keyword().find_matches_as_indexes(blob.lower()))


def find_secrets(text: str) -> list[Secret]:
    """The secrets in ``text``, in order, without overlaps (the first rule's match wins)."""
    if len(text) < 8:
        return []
    lowered = _lowered(text)
    encoded = lowered.encode("utf-8", "surrogatepass")
    # Most text holds no keyword, and then no rule runs; the quick pass tells.
    if not _any_keyword().find_matches_as_indexes(encoded):
        return []
    # One pass for all keywords present (a membership test per keyword costs 40 passes).
    keywords, automaton = _keywords()
    present = {keywords[index] for index, _, _ in automaton.find_matches_as_indexes(encoded, overlapping=True)}
    found: list[Secret] = []
    for rule in rules():
        wanted = [keyword for keyword in rule.keywords if keyword in present]
        if not wanted:
            continue
        for match in _matches(rule, wanted, text, lowered):
            start, end = match.span(rule.group)
            value = match.group(rule.group)
            if start < 0 or not value or (rule.valid is not None and not rule.valid(value)):
                continue
            found.append(Secret(rule, start, end, value))
    return _without_overlaps(found)


def _matches(rule: SecretRule, keywords: list[str], text: str, lowered: str) -> list[re.Match[str]]:
    if not rule.anchored:
        return list(rule.pattern.finditer(text))
    starts: set[int] = set()
    for keyword in keywords:
        position = lowered.find(keyword)
        while position >= 0:
            starts.add(position)
            position = lowered.find(keyword, position + 1)
    matches: list[re.Match[str]] = []
    end = 0
    for position in sorted(starts):
        if position < end:
            continue
        match = rule.pattern.match(text, position)
        if match is not None:
            matches.append(match)
            end = match.end()
    return matches


def _without_overlaps(found: list[Secret]) -> list[Secret]:
    if len(found) < 2:
        return found
    order = {rule: position for position, rule in enumerate(rules())}
    kept: list[Secret] = []
    for secret in sorted(found, key=lambda s: (order[s.rule], s.start)):
        if all(secret.end <= other.start or secret.start >= other.end for other in kept):
            kept.append(secret)
    return sorted(kept, key=lambda s: s.start)
