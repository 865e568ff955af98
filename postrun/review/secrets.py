"""Finding secrets in text with the rules of ``postrun.review.secret_rules``.

Each rule has keywords, all found in one pass (an Aho-Corasick automaton over the
lower-cased text, and one over the text as it is for the few exact-case keywords): a
rule's regex runs only where one of its keywords occurs, which keeps a megabyte of output
in the milliseconds. Pure: text in, spans out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import ahocorasick_rs

from postrun.review.credentials import bits_per_char
from postrun.review.secret_patterns import DETECT_SECRETS_VERSION
from postrun.review.secret_rules import RULES_VERSION, SecretRule, rules
from postrun.text import one_line

_FILLER_BITS = 2.0  # per character

__all__ = ["DETECT_SECRETS_VERSION", "RULES_VERSION", "Secret", "SecretRule", "find_secrets", "mask", "quote", "rules"]


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


def quote(text: str, limit: int) -> str:
    """``text`` as a flag's reason quotes it: one line of at most ``limit`` characters, every
    secret in it masked first (``mask``): cut first, a secret's rest would match no rule."""
    for secret in reversed(find_secrets(text)):
        text = text[: secret.start] + secret.masked + text[secret.end :]
    return one_line(text, limit)


# The quick look reads a long text in pieces of this many bytes: measured on 3,000 source files
# (37 MB), 30 ms, where one pass over each text took 81 ms (automata of 16 needles: 30 ms).
_QUICK_PIECE = 4096
_NEEDLE_MAX = 64  # bytes: longer than any needle, so a needle across two pieces is in the first
# Pieces shared by several keywords (`-us0` … `-us9`, `dop_v1_` and `doo_v1_`): the quick look
# searches for these instead, fewer needles.
_SHARED_NEEDLES = ("-us", "_v1_", "shp", "k_live_", "k_test_", "k_prod_", "glp", "432:")


def quick_look_needles(keywords: tuple[str, ...]) -> tuple[str, ...]:
    """What the quick look searches for: each keyword holds one of them (a text without any
    needle holds no keyword), as few as the shared pieces make them."""
    needles = {next((piece for piece in _SHARED_NEEDLES if piece in keyword), keyword) for keyword in keywords}
    return tuple(sorted(needle for needle in needles if not any(other in needle for other in needles - {needle})))


@functools.cache
def _keywords(exact: bool) -> tuple[tuple[str, ...], ahocorasick_rs.BytesAhoCorasick, ahocorasick_rs.BytesAhoCorasick]:
    """The lower-case (or the exact-case) keywords of every rule, an automaton that finds them
    all in one overlapping pass, and the quick look's automaton that only tells whether any
    occurs (leftmost-first over the needles). One automaton of all the needles: measured on the
    review bench's 300 sessions (17 MB of text looked at), 46 ms, where automata of 16 needles
    each took 150 ms (one pass each, and more false starts in each)."""
    keywords = tuple(dict.fromkeys(keyword for rule in rules() if rule.exact == exact for keyword in rule.keywords))
    needles = [needle.encode() for needle in quick_look_needles(keywords)]
    dfa = ahocorasick_rs.Implementation.DFA  # past 64 keywords, many times faster than the default NFA
    return (
        keywords,
        ahocorasick_rs.BytesAhoCorasick([keyword.encode() for keyword in keywords], implementation=dfa),
        ahocorasick_rs.BytesAhoCorasick(needles, matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST),
    )


def _lowered(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two: positions would drift
        lowered = "".join(char.lower() if len(char.lower()) == 1 else char for char in text)
    return lowered


def _any(lowered: bytes, exact: bytes) -> bool:
    return _holds_needle(_keywords(False), lowered) or _holds_needle(_keywords(True), exact)


def _holds_needle(
    keywords: tuple[tuple[str, ...], ahocorasick_rs.BytesAhoCorasick, ahocorasick_rs.BytesAhoCorasick], blob: bytes
) -> bool:
    """Whether ``blob`` holds one of the quick look's needles: a long text piece by piece (each
    piece overlapping the next by a needle's length), as the automaton lists every match and a
    source file read whole holds hundreds; the first piece with one ends the look."""
    _, _, quick = keywords
    if len(blob) <= _QUICK_PIECE:
        return bool(quick.find_matches_as_indexes(blob))
    view = memoryview(blob)
    return any(
        quick.find_matches_as_indexes(view[start : start + _QUICK_PIECE + _NEEDLE_MAX])
        for start in range(0, len(blob), _QUICK_PIECE)
    )


def _encoded(text: str) -> tuple[bytes, bytes]:
    """``text`` lower-cased and as it is, as UTF-8: an ASCII text lower-cases as bytes."""
    exact = text.encode("utf-8", "surrogatepass")
    return (exact.lower() if text.isascii() else _lowered(text).encode("utf-8", "surrogatepass")), exact


def may_hold_secrets(text: str) -> bool:
    """False when no rule can match anywhere in ``text`` (no keyword occurs in it).

    Cheap, for many texts joined into one: a keyword in one of them is a keyword in the
    whole (keywords are ASCII, and an ASCII letter lower-cases the same everywhere).
    """
    return _any(*_encoded(text))


def json_may_hold_secrets(blob: bytes) -> bool:
    """``may_hold_secrets`` over every string of a JSON document, without decoding it: False
    only when no rule can match in any of them.

    No keyword holds a character JSON escapes, so a keyword in a string is one in the document.
    Only an ASCII document is looked at (lower-cased as bytes): a few other characters
    lower-case into ASCII letters, so any other is True.
    """
    return not blob.isascii() or _any(blob.lower(), blob)


def find_secrets(text: str) -> list[Secret]:
    """The secrets in ``text``, in order, without overlaps (the first rule's match wins)."""
    if len(text) < 8:
        return []
    encoded, exact = _encoded(text)
    # Most text holds no keyword, and then no rule runs; the quick pass tells.
    if not _any(encoded, exact):
        return []
    lowered = text.lower() if text.isascii() else _lowered(text)
    # One pass for all keywords present (a membership test per keyword costs 40 passes).
    present: set[str] = set()
    for blob, (keywords, automaton, _) in ((encoded, _keywords(False)), (exact, _keywords(True))):
        present.update(keywords[index] for index, _, _ in automaton.find_matches_as_indexes(blob, overlapping=True))
    found: list[Secret] = []
    for rule in rules():
        wanted = [keyword for keyword in rule.keywords if keyword in present]
        if not wanted:
            continue
        for match in _matches(rule, wanted, text, text if rule.exact else lowered):
            if rule.valid is not None and not rule.valid(match):
                continue
            secret = _secret(rule, match)
            if secret is not None:
                found.append(secret)
    return _without_overlaps(found)


def _secret(rule: SecretRule, match: re.Match[str]) -> Secret | None:
    start, end = match.span(rule.group)
    if start < 0:
        return None
    while start < end and match.string[start] in rule.trim:
        start += 1
    while end > start and match.string[end - 1] in rule.trim:
        end -= 1
    value = match.string[start:end]
    # A run of a few characters (`sk_test_xxxx…`, `AKCxxxx…`) is a placeholder, whatever the rule.
    return Secret(rule, start, end, value) if bits_per_char(value) >= _FILLER_BITS else None


def _matches(rule: SecretRule, keywords: list[str], text: str, searched: str) -> list[re.Match[str]]:
    """``rule``'s matches in ``text``; ``searched`` is where its keywords are looked for (the
    text lower-cased, as long as the text, or the text itself for exact-case keywords)."""
    if not rule.anchored:
        return list(rule.pattern.finditer(text))
    starts: set[int] = set()
    for keyword in keywords:
        position = searched.find(keyword)
        while position >= 0:
            starts.add(position)
            position = searched.find(keyword, position + 1)
    matches: list[re.Match[str]] = []
    end = 0
    for position in sorted(starts):
        for start in range(max(end, position - rule.lead), position + 1):
            match = rule.pattern.match(text, start)
            if match is not None:
                matches.append(match)
                end = match.end()
                break
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
