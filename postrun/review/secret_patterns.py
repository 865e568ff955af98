"""detect-secrets' rules, copied verbatim (the maintained rule set), and what is left out of it.

Importing the package costs about 8 MB and 0.25 s in every capture, so it is a test
dependency only; a unit test fails when an installed detect-secrets ships other patterns,
other keywords or a plugin this module neither copies nor leaves out with a reason.
"""

from __future__ import annotations

import re

DETECT_SECRETS_VERSION = "1.5.0"

# (plugin, [(pattern, flags)]) as detect-secrets ships them; re.UNICODE is implied.
DETECT_SECRETS_PATTERNS: dict[str, tuple[tuple[str, int], ...]] = {
    "AWSKeyDetector": (
        (r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", 0),
        (r"""aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\'\"]([0-9a-zA-Z/+]{40})[\'\"]""", re.I),
    ),
    "ArtifactoryDetector": (
        (r'(?:\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}(?:\s|"|$)', 0),
        (r'(?:\s|=|:|"|^)AP[\dABCDEF][a-zA-Z0-9]{8,}(?:\s|"|$)', 0),
    ),
    "AzureStorageKeyDetector": ((r"AccountKey=[a-zA-Z0-9+\/=]{88}", 0),),
    "CloudantDetector": (
        (
            r"""(?:(?<=\W)|(?<=^))(?:\[|)(?:"|\'|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)"""
            r"""(?:"|\'|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\'|)([0-9a-f]{64})(?:"|\'|)""",
            re.I,
        ),
        (
            r"""(?:(?<=\W)|(?<=^))(?:\[|)(?:"|\'|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)"""
            r"""(?:"|\'|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\'|)([a-z]{24})(?:"|\'|)""",
            re.I,
        ),
        (r"(?:https?\:\/\/)[\w\-]+\:([0-9a-f]{64})\@[\w\-]+\.cloudant\.com", re.I),
        (r"(?:https?\:\/\/)[\w\-]+\:([a-z]{24})\@[\w\-]+\.cloudant\.com", re.I),
    ),
    "DiscordBotTokenDetector": ((r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}", 0),),
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
    "IbmCloudIamDetector": (
        (
            r"""(?:(?<=\W)|(?<=^))(?:\[|)(?:"|\'|)(?:ibm(?:_|-|)cloud(?:_|-|)iam|cloud(?:_|-|)iam|ibm(?:_|-|)cloud"""
            r"""|ibm(?:_|-|)iam|ibm|iam|cloud|)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)(?:"|\'|)"""
            r"""(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\'|)([a-zA-Z0-9_\-]{44}(?![a-zA-Z0-9_\-]))(?:"|\'|)""",
            re.I,
        ),
    ),
    "IbmCosHmacDetector": (
        (
            r"""(?:(?<=\W)|(?<=^))(?:\[|)(?:"|\'|)(?:(?:ibm)?[-_]?cos[-_]?(?:hmac)?|)(?:_|-|)"""
            r"""(?:secret[-_]?(?:access)?[-_]?key)(?:"|\'|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\'|)"""
            r"""([a-f0-9]{48}(?![a-f0-9]))(?:"|\'|)""",
            re.I,
        ),
    ),
    "JwtTokenDetector": ((r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?", 0),),
    "MailchimpDetector": ((r"[0-9a-z]{32}-us[0-9]{1,2}", 0),),
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
    "SoftlayerDetector": (
        (
            r"""(?:(?<=\W)|(?<=^))(?:\[|)(?:"|\'|)(?:softlayer|sl)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)"""
            r"""(?:"|\'|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\'|)([a-z0-9]{64})(?:"|\'|)""",
            re.I,
        ),
        (r"(?:http|https)://api.softlayer.com/soap/(?:v3|v3.1)/([a-z0-9]{64})", re.I),
    ),
    "SquareOAuthDetector": ((r"sq0csp-[0-9A-Za-z\\\-_]{43}", 0),),
    "StripeDetector": ((r"(?:r|s)k_live_[0-9a-zA-Z]{24}", 0),),
    "TelegramBotTokenDetector": ((r"\d{8,10}:[0-9A-Za-z_-]{35}", 0),),
    "TwilioKeyDetector": ((r"AC[a-z0-9]{32}", 0), (r"SK[a-z0-9]{32}", 0)),
}

# The keyword plugin's names of credentials (``keyword.DENYLIST``), as regex pieces: the
# credential-assignment rule takes a name that holds one of them as a credential's name.
DETECT_SECRETS_KEYWORDS = (
    "api_?key", "auth_?key", "service_?key", "account_?key", "db_?key", "database_?key", "priv_?key",
    "private_?key", "client_?key", "db_?pass", "database_?pass", "key_?pass", "password", "passwd", "pwd",
    "secret", "contraseña", "contrasena",
)  # fmt: skip

# The plugins whose rules are not copied, and why.
LEFT_OUT = {
    "Base64HighEntropyString": "flags every random hash, digest and id; entropy judges assigned values instead",
    "HexHighEntropyString": "flags every commit id and checksum; entropy judges assigned values instead",
    "KeywordDetector": "its keywords (DETECT_SECRETS_KEYWORDS) name credentials in the assignment rule",
    "IPPublicDetector": "a public address is not a secret, and commands print them all the time",
    "BasicAuthDetector": "its password ends at the first ! $ & ( ) * + , ; = and needs a user name: the"
    " url_password rule takes a URL's password up to its host's @ (redis://:pw@host too)",
}
