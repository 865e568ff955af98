"""The secret rules: detect-secrets' plugins, then the formats it lacks, most specific first.

detect-secrets' patterns (``postrun.review.secret_patterns``) are used as they ship, with a
word boundary around them where a token is a word of its own and the rest of the token
after them (its patterns fix lengths some tokens outgrew: a 107-character Stripe key, a
Discord token's longer signature), so a mask always covers the whole secret. The formats
it has no plugin for follow gitleaks' rule set (token prefixes and lengths): Anthropic,
current OpenAI, Hugging Face, DigitalOcean, Shopify, Vault, Databricks, Groq and more;
passwords in URLs, ``curl -u``, ``.netrc`` and ``.pgpass`` lines, Azure SAS signatures;
passwords given as options on a command line (``docker login -p``, ``mysql -pX``, ``sshpass -p``);
whole PEM blocks; and ``NAME = value`` credentials (judged by ``postrun.review.credentials``).

Each rule has lower-case keywords (or exact-case ones, for tokens only an upper-case prefix
tells apart): its regex runs only where one occurs, and an anchored rule's match begins at
the keyword (up to ``lead`` characters before it).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from postrun.review.credentials import ASSIGNMENT, NAME_KEYWORDS, assigned, is_literal_secret
from postrun.review.secret_patterns import DETECT_SECRETS_PATTERNS

# Bump when a rule changes: stored sessions are re-flagged under the new rules.
RULES_VERSION = "7"

_START = r"(?<![A-Za-z0-9_-])"  # a token begins a word: no `sk-` inside `task-…`
# A token with a prefix of its own may also be glued to a name with `-` or `_` (a branch
# `fix-ghp_…`, `KEY_hf_…`), and is then taken when digits follow, as in a token's random body:
# `get_github_pat_from_env`, `run_sk_test_suite` and `fix-ghp_token_masking` are names. A letter
# or digit before the prefix always makes it the end of another word (`task-`, `disk_test_`).
_TOKEN_START = r"(?:(?<![A-Za-z0-9_-])|(?<=[-_])(?=[A-Za-z0-9_-]*[0-9]))"
_END = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True, slots=True)
class SecretRule:
    kind: str  # the `[REDACTED:<kind>]` name
    label: str  # what a person reads in a flag's reason
    source: str  # where the rule comes from
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]  # lower-case (as written when ``exact``); the regex runs only where one occurs
    # True: every match starts at one of the keywords (or up to ``lead`` characters before
    # it), so the regex is tried only there; False: the whole text is searched.
    anchored: bool = False
    group: int | str = 0  # the part of the match that is the secret
    keep: int = 0  # leading characters a masked match may show (a public prefix)
    valid: Callable[[re.Match[str]], bool] | None = None  # a check on the match
    exact: bool = False  # the keywords are matched with their case (an upper-case prefix)
    lead: int = 0  # how many characters before its keyword an anchored match may begin
    trim: str = ""  # characters a match may begin or end with that are not the secret's


class _How(NamedTuple):
    """How a rule is applied (see ``SecretRule``); ``before``/``after`` wrap a copied pattern."""

    keywords: tuple[str, ...]
    anchored: bool = True
    keep: int = 0
    group: int | str = 0
    before: str = ""
    after: str = ""
    valid: Callable[[re.Match[str]], bool] | None = None
    exact: bool = False
    lead: int = 0
    trim: str = ""


def _rule(kind: str, label: str, source: str, regex: str, flags: int, how: _How) -> SecretRule:
    options: dict[str, Any] = how._asdict()
    global_flags = _GLOBAL_FLAGS.match(regex)  # `(?i)` must stay first
    start = global_flags.end() if global_flags else 0
    regex = f"{regex[:start]}{options.pop('before')}(?:{regex[start:]}){options.pop('after')}"
    return SecretRule(kind, label, source, re.compile(regex, flags), **options)


# The copied patterns whose group 1 is the secret itself (plugin, pattern's index), the match
# holding its name and quotes too: AWS's ``aws_secret_access_key = "<40>"``, Cloudant's
# ``cloudant_password: <key>`` and URLs.
_SECRET_GROUPS = {("AWSKeyDetector", 1), *(("CloudantDetector", index) for index in range(4))}


def _secret_part(how: _How, plugin: str, index: int) -> _How:
    """What of a copied pattern's match is masked and quoted: the secret, not the name and
    quotes before it (and then no prefix of it is public)."""
    return how._replace(group=1, keep=0) if (plugin, index) in _SECRET_GROUPS else how


def _jwt_valid(match: re.Match[str]) -> bool:
    """detect-secrets' check: header and payload are base64url JSON."""
    for part in match.group(0).split(".")[:2]:
        if len(part) % 4 == 1:
            return False
        try:
            orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        except (binascii.Error, ValueError):
            return False
    return True


def _not_an_example(match: re.Match[str]) -> bool:
    return not match.group(0).endswith("EXAMPLE")  # AWS's documented example keys


def _literal_password(match: re.Match[str]) -> bool:
    return is_literal_secret(match.group("pw"), quoted=True, strength="strong")


_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
_TOKEN_CHARS = "[A-Za-z0-9_-]*"
_TWILIO = tuple(f"{prefix}{char}" for prefix in ("SK", "AC") for char in "0123456789abcdef")
# AWS key ids are upper-case; the second pattern starts at `aws` in any case (these are the usual).
_AWS = ("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "aws", "AWS", "Aws")
_ARTIFACTORY = ("AKC", *(f"AP{char}" for char in "0123456789ABCDEF"))
_GITLAB = (
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
)

# (plugin, kind, label, how): detect-secrets' token plugins.
_COPIED: tuple[tuple[str, str, str, _How], ...] = (
    ("OpenAIDetector", "openai_key", "OpenAI API key", _How(("sk-",), keep=3, before=_TOKEN_START, after=_TOKEN_CHARS)),
    (
        "AWSKeyDetector",
        "aws_key",
        "AWS key",
        # An upper-case id of fixed length: a word of its own even beside `-` or `_` (a branch
        # `fix-AKIA…-leak`, `KEY_AKIA…`), unlike tokens whose prefix ends words (`task-…`).
        _How(_AWS, keep=4, before=r"(?<![A-Za-z0-9])", after=r"(?![A-Za-z0-9])", valid=_not_an_example, exact=True),
    ),
    (
        "GitHubTokenDetector",
        "github_token",
        "GitHub token",
        _How(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), keep=4, before=_TOKEN_START, after="[A-Za-z0-9_]*"),
    ),
    # GitLab 17's routable tokens end in `.<version><checksum>`: the mask covers it too.
    (
        "GitLabTokenDetector",
        "gitlab_token",
        "GitLab token",
        _How(_GITLAB, keep=5, after=r"(?:\.[0-9a-z]{9}(?![\w.]))?"),
    ),
    (
        "StripeDetector",
        "stripe_key",
        "Stripe key",
        _How(("sk_live_", "rk_live_"), keep=8, before=_TOKEN_START, after="[0-9a-zA-Z]*"),
    ),
    ("SlackDetector", "slack_token", "Slack token", _How(("xox", "https://hooks.slack.com"), keep=4)),
    # No prefix shown: a legacy token (a UUID) has no public part, its first characters are secret.
    ("NpmDetector", "npm_token", "npm token", _How(("_authtoken",), anchored=False, group=1)),
    ("PypiTokenDetector", "pypi_token", "PyPI token", _How(("pypi-ag",), keep=5)),
    ("SendGridDetector", "sendgrid_key", "SendGrid key", _How(("sg.",), keep=3)),
    ("SquareOAuthDetector", "square_secret", "Square OAuth secret", _How(("sq0csp-",), keep=7)),
    ("AzureStorageKeyDetector", "azure_storage_key", "Azure storage key", _How(("accountkey=",))),
    ("TwilioKeyDetector", "twilio_key", "Twilio key", _How(_TWILIO, keep=2, exact=True, before=_START, after=_END)),
    ("TelegramBotTokenDetector", "telegram_token", "Telegram bot token", _How((":aa",), lead=10, after=_END)),
    # Its pattern has no fixed part to look for: it runs where the text names Discord.
    (
        "DiscordBotTokenDetector",
        "discord_token",
        "Discord bot token",
        _How(("discord",), anchored=False, before=_START, after=r"[\w-]*"),
    ),
    (
        "MailchimpDetector",
        "mailchimp_key",
        "Mailchimp API key",
        _How(tuple(f"-us{d}" for d in range(10)), lead=32, before=_START, after=_END),
    ),
    (
        "ArtifactoryDetector",
        "artifactory_token",
        "Artifactory token",
        _How(_ARTIFACTORY, exact=True, lead=1, trim=' \t\r\n=:"'),
    ),
    ("CloudantDetector", "cloudant_key", "Cloudant key", _How(("cloudant", "clou"), anchored=False, group=1)),
    ("IbmCloudIamDetector", "ibm_cloud_key", "IBM Cloud IAM key", _How(("ibm", "cloud"), lead=2, group=1)),
    # Every match holds `secret`, up to `["ibm_cos_hmac_` before it.
    ("IbmCosHmacDetector", "ibm_cos_key", "IBM COS HMAC key", _How(("secret",), lead=15, group=1)),
    ("SoftlayerDetector", "softlayer_key", "SoftLayer key", _How(("softlayer",), lead=12, group=1)),
)

# Looked for with their case: in lower case they are everywhere in text, or they would make
# the lower-case keywords too many for the vectorized search (see ``postrun.review.secrets``).
_UPPER_CASE_PREFIXES = frozenset({"AIza", "GOCSPX-", "PMAK-", "NRAK-", "ATATT3", "HRKU-AA"})
# (kind, label, prefix, body): tokens that are a prefix and a body, a word of their own (gitleaks' formats).
_TOKENS: tuple[tuple[str, str, str, str], ...] = (
    ("anthropic_key", "Anthropic API key", "sk-ant-", "[A-Za-z0-9_-]{20,}"),
    ("github_token", "GitHub token", "github_pat_", "[A-Za-z0-9_]{22,}"),
    *(
        ("stripe_key", "Stripe key", f"{key}_{mode}_", "[0-9a-zA-Z]{10,}")
        for key in ("sk", "rk")
        for mode in ("test", "prod")
    ),
    ("stripe_key", "Stripe webhook secret", "whsec_", "[A-Za-z0-9+/=]{24,}"),
    ("slack_token", "Slack token", "xapp-", r"\d-[A-Z0-9]+-\d+-[a-z0-9]+"),
    ("slack_token", "Slack config token", "xoxe.xox", r"[bp]-\d-[A-Z0-9]{163,166}"),
    ("slack_token", "Slack config token", "xoxe-", r"\d-[A-Z0-9]{146}"),
    ("heroku_key", "Heroku API key", "HRKU-AA", "[0-9a-zA-Z_-]{58}"),
    ("google_api_key", "Google API key", "AIza", "[0-9A-Za-z_-]{35}"),
    ("google_oauth_secret", "Google OAuth client secret", "GOCSPX-", "[A-Za-z0-9_-]{28}"),
    ("npm_token", "npm token", "npm_", "[A-Za-z0-9]{36}"),
    ("huggingface_token", "Hugging Face token", "hf_", "[A-Za-z0-9]{34}"),
    *(("digitalocean_token", "DigitalOcean token", f"do{kind}_v1_", "[a-f0-9]{64}") for kind in "por"),
    *(("shopify_token", "Shopify token", f"shp{kind}_", "[a-fA-F0-9]{32}") for kind in ("at", "ca", "pa", "ss")),
    ("vault_token", "HashiCorp Vault token", "hvs.", r"[\w-]{90,120}"),
    ("vault_token", "HashiCorp Vault token", "hvb.", r"[\w-]{138,300}"),
    ("databricks_token", "Databricks token", "dapi", r"[a-f0-9]{32}(?:-\d)?"),
    ("groq_key", "Groq API key", "gsk_", "[A-Za-z0-9]{52}"),
    ("postman_key", "Postman API key", "PMAK-", "[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    ("age_key", "age secret key", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("linear_key", "Linear API key", "lin_api_", "[A-Za-z0-9]{40}"),
    ("doppler_token", "Doppler token", "dp.pt.", "[A-Za-z0-9]{43}"),
    ("grafana_token", "Grafana token", "glsa_", "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana_token", "Grafana token", "glc_", "[A-Za-z0-9+/]{32,400}={0,3}"),
    ("brevo_key", "Brevo (Sendinblue) API key", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("newrelic_key", "New Relic API key", "NRAK-", "[A-Z0-9]{27}"),
    ("atlassian_token", "Atlassian API token", "ATATT3", "[A-Za-z0-9_=-]{186}"),
    ("perplexity_key", "Perplexity API key", "pplx-", "[A-Za-z0-9]{48}"),
    ("sentry_token", "Sentry token", "sntryu_", "[a-f0-9]{64}"),
    ("rubygems_key", "RubyGems API key", "rubygems_", "[a-f0-9]{48}"),
    ("pulumi_token", "Pulumi token", "pul-", "[a-f0-9]{40}"),
    ("supabase_token", "Supabase token", "sbp_", "[a-f0-9]{40}"),
    ("flyio_token", "Fly.io token", "fo1_", r"[\w-]{43}"),
)

# The rest of a command up to an option: bounded, as a keyword may occur thousands of times on
# one long line (minified output) and each try would otherwise scan to its end.
_SAME_COMMAND = r"[^\n|;&]{0,400}?"
# An option's value on a command line, quoted or a word.
_OPTION_VALUE = r"""(?P<q>["'])?(?P<pw>(?(q)[^"'\n]+|[^\s"';|&)]+))(?(q)(?P=q))"""
# Passwords given to a program as an option's value: (keywords, anchored (a match begins at the
# keyword), the program, options whose value follows a space or `=`, options the value is glued
# to). The registries' clients are looked for where `login` occurs: one keyword for eight (each
# keyword the quick look searches for costs every text a little). `-p X` asks MySQL for the
# password (X is the database): only `-pX` holds one.
_PASSWORD_OPTIONS: tuple[tuple[tuple[str, ...], bool, str, str, str], ...] = (
    (
        ("login",),
        False,
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm[ \t]+registry)[ \t]+login\b",
        "-p|--password",
        "",
    ),
    (("sshpass",), True, r"sshpass\b", "-p", "-p"),
    (("mysql", "mariadb"), True, r"(?:mysql|mariadb)[\w-]*+", "", "-p|--password="),
    (("redis-cli",), True, r"redis-cli\b", "-a|--pass", ""),
    (("mongo",), True, r"mongo(?:sh|dump|restore|export|import|stat|top|files)?\b", "-p|--password", ""),
    (("sqlcmd",), True, r"sqlcmd\b", "-P", ""),
    (("ldap",), True, r"ldap(?:search|modify|add|delete|compare|passwd|whoami|modrdn|exop)\b", "-w", ""),
    (("openssl",), True, r"openssl\b", "-k", "-pass(?:in|out)?[ \t]+pass:"),
    (("smbclient",), True, r"smbclient\b", "", r"""(?:-U|--user)(?:=|[ \t]+)[^\s%'"]+%"""),
)


def _option_password(program: str, spaced: str, glued: str) -> str:
    options = [rf"(?:{spaced})(?:=|[ \t]+)"] if spaced else []
    options += [f"(?:{glued})"] if glued else []
    return rf"{program}{_SAME_COMMAND}[ \t](?:{'|'.join(options)}){_OPTION_VALUE}"


# (kind, label, regex, how): secrets known by where they sit, most specific first.
_PLACED: tuple[tuple[str, str, str, _How], ...] = (
    (
        "openai_key",
        "OpenAI API key",
        rf"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?=[\w-]*\d)[\w-]{{20,}}{_END}",
        # Only at the start of a word: glued to a name, `sk-proj-2026-…` is a file's name as often
        # (a key glued to one holds `T3BlbkFJ`: detect-secrets' rule above finds it there).
        _How(("sk-",), keep=3, before=_START),
    ),
    (
        "azure_sas",
        "Azure shared access signature",
        r"(?i)[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{20,})",
        _How(("sig=",), lead=1, group="v"),
    ),
    (
        "azure_sas",
        "Azure shared access key",
        r"(?i)SharedAccessKey=(?P<v>[A-Za-z0-9+/=]{20,})",
        _How(("sharedaccesskey=",), group="v"),
    ),
    # A URL's password runs to the last `@` before its host: `!`, `&` and `$` included.
    (
        "url_password",
        "password in a URL",
        r"""://[^\s:/?#@\[\]"'`<>]*:(?P<pw>[^\s/?"'`<>]+)@(?=[A-Za-z0-9\[])""",
        _How(("://",), group="pw", valid=_literal_password),
    ),
    (
        "url_password",
        "password given to curl",
        r"""(?i)curl\b[^\n]{0,400}?\s(?:-u|--user)(?:=|[ \t]+)(?P<q>["']?)[^\s:'"]+:(?P<pw>[^\s'"]+)(?P=q)""",
        _How(("curl",), group="pw", valid=_literal_password),
    ),
    (
        "netrc_password",
        ".netrc password",
        r"machine[ \t]+\S+(?:\s+(?:login|account|port)[ \t]+\S+)*\s+password[ \t]+(?P<pw>\S+)",
        _How(("machine",), group="pw", valid=_literal_password),
    ),
    (
        "pgpass_password",
        ".pgpass password",
        r"(?m)^[^:\s#][^:\s]*:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<pw>(?:\\.|[^:\s\\])+)$",
        # PostgreSQL's ports: 5430-5439, pgbouncer's 6432, Supabase's pooler 6543, DigitalOcean's 25060.
        _How(("5432:", "6432:", ":*:", ":543", "6543:", "25060:"), anchored=False, group="pw", valid=_literal_password),
    ),
    (
        "authorization_header",
        "Authorization header",
        r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|bot|digest)\s+)?([A-Za-z0-9._~+/=-]{8,})",
        _How(("authorization",), group=1),
    ),
    ("credential", "credential assignment", ASSIGNMENT, _How(NAME_KEYWORDS, group="secret", valid=assigned)),
    *(
        (
            "cli_password",
            "password on a command line",
            _option_password(program, spaced, glued),
            _How(keywords, anchored, group="pw", valid=_literal_password, before=r"(?<![\w.-])"),
        )
        for keywords, anchored, program, spaced, glued in _PASSWORD_OPTIONS
    ),
    (
        "cli_password",
        "password on a command line",
        # `htpasswd -b [-c…] FILE USER PASSWORD` (or `-nb USER PASSWORD`): the password is the last word.
        # The flags before the first with a `b` and that flag (up to its `b`) are read one way, each
        # flag whole (possessive): a long flag tried at each of its letters was quadratic.
        rf"htpasswd(?:[ \t]+-[ac-zA-Z]++(?=[ \t]))*+[ \t]+-[ac-zA-Z]*+b[A-Za-z]*+(?:[ \t]+-[A-Za-z]++(?=[ \t]))*"
        rf"(?:[ \t]+[^\s|;&]++){{1,2}}"
        rf"[ \t]+{_OPTION_VALUE}(?=[ \t]*(?:[\n|;&)]|$))",
        _How(("htpasswd",), group="pw", valid=_literal_password, before=r"(?<![\w.-])"),
    ),
)


@functools.cache
def rules() -> tuple[SecretRule, ...]:
    """Every rule, most specific first: where two matches overlap, the earlier rule wins."""
    pem_headers = "|".join(pattern for pattern, _ in DETECT_SECRETS_PATTERNS["PrivateKeyDetector"])
    # detect-secrets finds a key's header line; the whole block is what must be masked.
    # Any `BEGIN … PRIVATE KEY` header (gitleaks': `ENCRYPTED PRIVATE KEY` too), beside detect-secrets' list.
    headers = rf"{pem_headers}|BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?"
    pem = rf"(?:-----)?(?:{headers})[\s\S]*?(?:-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----|\Z)"
    source = "detect-secrets "
    jwt = DETECT_SECRETS_PATTERNS["JwtTokenDetector"][0][0]
    return (
        _rule(
            "private_key",
            "private key",
            f"{source}PrivateKeyDetector",
            pem,
            0,
            _How(("private key", "putty-user-key"), anchored=False),
        ),
        # detect-secrets' JWT pattern ends lazily and leaves the signature out: the rest is taken.
        # Before the token rules: a token's prefix glued in a signature (`…_ghp_…`) is the
        # signature's, and masking only that part would show the rest of the JWT.
        _rule(
            "jwt",
            "JSON Web Token",
            f"{source}JwtTokenDetector",
            jwt,
            0,
            _How(("eyj",), keep=3, after="[A-Za-z0-9-_.+/=]*", valid=_jwt_valid),
        ),
        *(
            _rule(kind, label, source + plugin, pattern, flags, _secret_part(how, plugin, index))
            for plugin, kind, label, how in _COPIED
            for index, (pattern, flags) in enumerate(DETECT_SECRETS_PATTERNS[plugin])
        ),
        *(
            _rule(
                kind,
                label,
                "postrun",
                re.escape(prefix) + body,
                0,
                _How(
                    (prefix if exact else prefix.lower(),),
                    keep=len(prefix),
                    before=_TOKEN_START,
                    after=_END,
                    exact=exact,
                ),
            )
            for kind, label, prefix, body in _TOKENS
            for exact in [prefix in _UPPER_CASE_PREFIXES]
        ),
        *(_rule(kind, label, "postrun", regex, 0, how) for kind, label, regex, how in _PLACED),
    )
