"""Is ``NAME = value`` a credential? The assignment rule's pattern and its judgement.

A name is a credential's when one of its words is (``password``, ``token``, ``secret`` and
detect-secrets' keyword list), or it names a kind of key that is secret (``api_key``,
``ENCRYPTION_KEY``): "strong". Any other ``…_key`` is "weak": only a random-looking value
makes it a secret. A name whose last word says it is about a credential, not one
(``token_count``, ``TOKEN_URL``, ``password_path``, ``max_tokens``), is none.

A value is a literal the name is given, not code (``get_token()``, ``os.environ[…]``,
``self.token``), a reference (``$TOKEN``, ``${{ secrets.X }}``), a placeholder
(``changeme``, ``<your key>``) or a word (``tls-secret``). Pure: strings in, answers out.

The pattern starts at a keyword of a credential's name (``pass``, ``token``, ``key`` …) and
takes the rest of the name, a closing quote or bracket, the operator (``=``, ``:``, ``:=``,
``=>``, a space after a ``--option``) and the value, quoted (up to its closing quote on the
line: a Django key's ``)`` included) or bare (up to a space, a quote, ``,`` or ``;``).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from postrun.review.secret_patterns import DETECT_SECRETS_KEYWORDS

# Where a name may begin (`pw` and `sig` are words of strong names, too common to look for alone).
NAME_KEYWORDS = ("pass", "pwd", "secret", "token", "credential", "key", "auth", "contrase")
# The blanks before an operator, a blank operator and those after it are each one run, split one
# way: the three runs could split a long run of blanks every way (cubic: 2,000 took minutes).
ASSIGNMENT = (
    rf"(?i)(?:{'|'.join(NAME_KEYWORDS)})(?P<name>[A-Za-z0-9_.-]{{0,40}}?)"
    r"""["'\]]{0,2}[ \t]*(?P<op>:=|=>|\?=|==|=|:(?![:/])|(?<![ \t])[ \t]++)[ \t]*(?:[brBR@](?=["'`]))?"""
    r"""(?P<quote>["'`])?"""
    r"""(?P<secret>(?(quote)(?:(?!(?P=quote))[^\n]){1,300}?|[^\s"'`,;]{1,300}))(?(quote)(?P=quote))"""
)
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STRONG_WORDS = frozenset(
    {
        *("password", "passwd", "pwd", "pw", "pass", "passphrase", "passcode", "secret", "token", "credential"),
        *("credentials", "apikey", "secretkey", "accesskey", "privatekey", "privkey", "authtoken", "sig"),
    }
)
# detect-secrets' keywords joined into words (``api_?key`` -> ``apikey``): a name holding one is strong.
_KEYWORD_COMPOUNDS = frozenset(keyword.replace("_?", "") for keyword in DETECT_SECRETS_KEYWORDS)
# ``<word>_key`` names that are secret whatever their value looks like.
_SECRET_KEY_KINDS = frozenset(
    {
        *("api", "auth", "access", "private", "priv", "secret", "client", "service", "account", "db", "database"),
        *("encryption", "encrypt", "crypt", "cipher", "aes", "signing", "sign", "master", "session", "hmac"),
        *("app", "license", "jwt", "webhook", "ssh", "gpg", "pgp", "deploy", "root", "admin", "storage", "shared"),
        *("cookie", "secure", "decryption", "wrapping", "consumer", "license"),
    }
)
# A last word that says the name is about a credential, not one.
_NOT_THE_VALUE = frozenset(
    {
        *("url", "uri", "urls", "endpoint", "host", "file", "files", "path", "paths", "dir", "name", "names"),
        *("id", "ids", "type", "types", "length", "len", "size", "count", "limit", "timeout", "ttl", "expiry"),
        *("expires", "expiration", "expire", "expired", "header", "prefix", "suffix", "env", "var", "field"),
        *("policy", "enabled", "required", "min", "max", "version", "hash", "format", "mode", "method", "kind"),
        *("label", "ref", "arn", "provider", "manager", "store", "class", "schema", "rotation", "regex"),
        *("pattern", "validator", "strategy", "handler", "tokens", "secrets", "passwords", "keys", "words"),
        *("keyword", "keywords", "input", "prompt", "help", "hint", "placeholder", "text", "title", "param"),
        *("index", "position", "pos", "start", "end", "budget", "usage", "estimate", "ratio", "rate"),
    }
)
# A first word that says the same (``public_key``, ``max_tokens``, ``csrf_token``).
_NOT_A_SECRET_FIRST = frozenset(
    {"public", "publishable", "pub", "csrf", "xsrf", "max", "min", "num", "total", "is", "has", "use", "show", "cache"}
)

# Values that are not literals: references, placeholders, our own masks, words of the language.
_PLACEHOLDER = re.compile(
    r"""(?ix)^(?:
        [$%].* | .*\$\{.* | .*\{\{.*\}\}.* | <.*> | \[redacted.* | \*+ | x{3,} | \.{3,} | ….*
      | changeme | change_me | changeit | password\d* | passwd | secret | example\w* | placeholder | dummy
      | .*EXAMPLE(?:KEY)?                            # AWS's documented example keys
      | test\w* | redacted | null | none | nil | true | false | undefined | required | optional
      | str | string | int | bytes | bool | boolean | number | object | any | secretstr
      | (?:your|my|some|the)[_-].*
      | (?:process\.env|os\.environ|os\.getenv|getenv|env|settings|config|secrets)\b.*
      | [\d.:_-]+                                    # numbers, times, versions: counts and limits
      | [~.]?/.* | [A-Za-z]:\\.*                     # a path
    )$"""
)
# Code: an identifier (chain) optionally called or indexed, a keyword of a language.
_CODE = re.compile(
    r"""(?x)^(?:
        (?:await|new|yield|return|typeof|lambda|not|await\s+\w+)\b.*
      | [!&*]?[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:\(.*|\[.*|\{.*|<.*)?
    )$"""
)
_WORDY = re.compile(r"[A-Za-z _.-]+")
# A value that begins with two words is a name made of parts (a cache's `Linux-pip-<hash>`), not a key.
_COMPOSED = re.compile(r"[A-Za-z]{2,}[-_.][A-Za-z]{2,}[-_.]")
_MIN_CHARS = 6
_RANDOM_BITS = 3.5  # per character: what gitleaks asks of a generic key's value
_RANDOM_CHARS = 16


def assigned(match: re.Match[str]) -> bool:
    """Whether a match of ``ASSIGNMENT`` is a credential: its whole name (found backwards from
    the keyword) says so, and its value is a literal secret."""
    text, start = match.string, match.start()
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    name = text[start : match.end("name")]
    op = match.group("op")
    quoted = match.group("quote") is not None
    if (op.isspace() and not name.startswith("--")) or (op == "==" and not quoted):
        return False  # words (`token expired`) or code (`password == confirm`), not an assignment
    strength = name_strength(name)
    value = match.group("secret")
    if strength == "none" or (not quoted and _unbalanced(value)):
        return False  # a bare value closing a bracket it never opened sits in code: `f(password=x1)`
    return is_literal_secret(value, quoted=quoted, strength=strength)


def _unbalanced(value: str) -> bool:
    return any(value.count(close) > value.count(open_) for open_, close in ("()", "[]", "{}"))


def name_strength(name: str) -> str:
    """``strong``, ``weak`` or ``none``: how much ``name`` says its value is a credential."""
    words = [word.lower() for word in _WORD.findall(name)]
    if not words or words[-1] in _NOT_THE_VALUE or words[0] in _NOT_A_SECRET_FIRST:
        return "none"
    joined = "".join(words)
    if any(word in _STRONG_WORDS for word in words) or any(part in joined for part in _KEYWORD_COMPOUNDS):
        return "strong"
    if words[-1] == "auth":  # a docker config's "auth", npm's "_auth"
        return "strong"
    if words[-1] == "key":
        return "strong" if len(words) > 1 and words[-2] in _SECRET_KEY_KINDS else "weak"
    return "none"


def is_literal_secret(value: str, *, quoted: bool, strength: str) -> bool:
    """Whether ``value``, given to a name of that strength, is a secret (not code, a reference,
    a placeholder or a word)."""
    if len(value) < _MIN_CHARS or _PLACEHOLDER.match(value):
        return False
    if not quoted and _CODE.match(value) and not any(char.isdigit() for char in value):
        return False
    if not quoted and "(" in value:  # a call, whatever its name
        return False
    if _WORDY.fullmatch(value) and not (len(value) >= 20 and bits_per_char(value) >= 4.0):
        return False
    if strength == "weak":
        return (
            len(value) >= _RANDOM_CHARS
            and bits_per_char(value) >= _RANDOM_BITS
            and any(char.isdigit() for char in value)
            and any(char.isalpha() for char in value)
            and not _COMPOSED.match(value)
        )
    return True


def bits_per_char(value: str) -> float:
    """Shannon entropy of ``value``'s characters."""
    counts = Counter(value)
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in counts.values())
