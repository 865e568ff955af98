"""The one redactor: what leaves the store (exports, ``show --redact``, ``search --redact``, the mirror) goes
through here.

Every secret the detector finds becomes ``[REDACTED:<kind>]`` and the user's home
folder is shown as ``~``. The redactor remembers what it masked (kind, where, the
text around it with the secret already replaced), so a person can check before
sharing. Pure: values in, values out.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, NamedTuple, TypeVar

import orjson

from postrun.review import secrets
from postrun.review.secrets import Secret, find_secrets
from postrun.review.structure import KEY_CHARS, key_look, masked_pieces, pair_found, pair_value, placeholder
from postrun.text import one_line, printable

_CONTEXT_CHARS = 30
_WORD_CHARS = 8  # a secret a pair gives away is masked elsewhere as a word from this long
_MARK_OPEN, _MARK_CLOSE, _CUT = "»", "«", "…"  # how a search snippet marks matches and cuts
# What the redactor masks, by version: text redacted under other rules is redacted again (the
# team mirror sends such sessions again). Bump _REDACTOR when how it looks changes.
_REDACTOR = "2"  # 2: secrets a record's structure splits
RULES_VERSION = f"secrets-{secrets.RULES_VERSION}+detect-secrets-{secrets.DETECT_SECRETS_VERSION}+redactor-{_REDACTOR}"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Masked:
    kind: str
    where: str  # which record and field
    context: str  # one line around the secret, the secret replaced


@dataclass
class Redactor:
    """Redacts values and keeps the list of what it masked (``masked``)."""

    home: str | None = None
    masked: list[Masked] = field(default_factory=list)

    def __post_init__(self) -> None:
        home = (self.home or "").rstrip("/")
        # Only a real home folder (not "/") is replaced, and only where a path component ends.
        self._home = re.compile(re.escape(home) + r"(?=/|$|[^\w.-])") if len(home) > 1 else None

    def text(self, value: str, where: str) -> str:
        return self._shown(value, find_secrets(value), where)

    def _shown(self, value: str, secrets: Sequence[Secret], where: str) -> str:
        """``value`` with ``secrets`` (found in it) masked, each noted with its context."""
        if secrets:
            pieces: list[str] = []
            spans: list[tuple[int, int, str]] = []
            done = 0
            length = 0
            for secret in secrets:
                pieces.append(value[done : secret.start])
                length += secret.start - done
                mark = placeholder(secret.kind)
                spans.append((length, length + len(mark), secret.kind))
                pieces.append(mark)
                length += len(mark)
                done = secret.end
            pieces.append(value[done:])
            value = "".join(pieces)
            for start, end, kind in spans:
                around = value[max(0, start - _CONTEXT_CHARS) : end + _CONTEXT_CHARS]
                self.masked.append(Masked(kind, where, one_line(around)))
        return self._home_shown(value)

    def _home_shown(self, value: str) -> str:
        if self._home is not None and self.home and self.home.rstrip("/") in value:
            value = self._home.sub("~", value)
        return value

    def snippet(
        self, snippet: str, fields: Sequence[str], limit: int, where: str, given: Mapping[str, str] | None = None
    ) -> str:
        """A search snippet (a window of the text the index holds, ``fields`` each cut to
        ``limit`` and joined by newlines, folded to one line, with »marks« around the matches
        and … where it was cut) with every secret of ``fields`` masked, one a cut cuts too (the
        window's, or a field's): its part in the window is replaced. ``given``: the secrets a
        pair of the step's record gives away (``given_away``), masked where they stand as words."""
        words = dict(given or {})
        source = "\n".join(part[:limit] for part in fields)
        folded, origins = _folded(source)
        plain = snippet.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "")
        core = plain.strip(_CUT)
        start = folded.find(core) if core else -1
        if start < 0:
            shown = self.text(snippet, where)
            for word, kind in words.items():
                shown = _as_word(word).sub(placeholder(kind), shown)
            return shown
        offset = plain.find(core) - start  # from a position in ``folded`` to one in ``plain``
        hidden: dict[int, int] = {}  # a position in ``plain`` inside a secret -> the secret's index
        secrets = _in_cut_fields(fields, limit, words)
        for index, secret in enumerate(secrets):
            for position in range(start, start + len(core)):
                if secret.start <= origins[position] < secret.end:
                    hidden[position + offset] = index
        out: list[str] = []
        position = 0
        for char in snippet:
            if char in (_MARK_OPEN, _MARK_CLOSE):
                if position not in hidden or position - 1 not in hidden:
                    out.append(char)
                continue
            index = hidden.get(position, -1)
            if index < 0:
                out.append(char)
            elif hidden.get(position - 1) != index:
                out.append(placeholder(secrets[index].kind))
            position += 1
        shown = self._home_shown("".join(out))
        self.masked += [Masked(secrets[index].kind, where, shown) for index in sorted(set(hidden.values()))]
        return shown

    def value(self, value: T, where: str) -> T:
        """``value`` (a JSON-like tree) with every string and key redacted, and every secret its
        structure splits (``postrun.review.structure``): a list of lines (a patch's) redacted as
        the lines together, a string beside its key (``{"password": "…"}``) as the pair; a
        secret a pair gives away is masked where it stands as a word in the tree's other strings."""
        self._paired: dict[str, str] = {}  # a secret a pair gave away -> its kind
        redacted = self._strings(value, where)
        for word, kind in self._paired.items():
            redacted = _words_masked(redacted, _as_word(word), placeholder(kind))
        return redacted

    def _strings(self, value: T, where: str) -> T:
        if isinstance(value, str):
            return self.text(value, where)  # type: ignore[return-value]
        if isinstance(value, dict):
            return self._dict(value, where)  # type: ignore[return-value]
        if isinstance(value, list):
            if len(value) > 1 and all(isinstance(item, str) for item in value):
                return self._lines(value, where)  # type: ignore[return-value]
            return [self._strings(item, f"{where}[{index}]") for index, item in enumerate(value)]  # type: ignore[return-value]
        return value

    def _dict(self, value: dict[str, Any], where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in value.items():
            holds, beside = key_look(key) if len(key) < KEY_CHARS else (True, False)
            base = self.text(key, where) if holds else self._home_shown(key)  # a token used as a key
            here = _join(where, base)  # what was masked is listed by where it was: the key as shown
            shown = self._strings(item, here)
            if beside and isinstance(shown, str):
                shown = self._pair(key, shown, here)
            name = base
            number = 1
            while name in out:  # two keys masked alike: numbered, so no value is lost
                number += 1
                name = f"{base} #{number}"
            out[name] = shown
        return out

    def _pair(self, key: str, value: str, where: str) -> str:
        """``value`` with the secrets that show only beside its ``key`` masked."""
        text, start, end, found = pair_found(key, value)
        if not found:
            return value
        self._shown(text, found, where)  # what was masked, with its context
        for secret in found:
            with contextlib.suppress(orjson.JSONDecodeError):
                word = orjson.loads(f'"{secret.value}"')
                if isinstance(word, str) and len(word) >= _WORD_CHARS:
                    self._paired[word] = secret.kind
        return self._home_shown(pair_value(text, start, end, found))

    def _lines(self, lines: list[str], where: str) -> list[str]:
        joined = "\n".join(lines)
        found = find_secrets(joined)
        if not found:  # none in the lines together, none in any one of them
            return [self._home_shown(line) for line in lines]
        self._shown(joined, found, where)  # what was masked, with its context
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        pieces = [(start, start + len(line)) for start, line in zip(starts, lines, strict=True)]
        return [self._home_shown(line) for line in masked_pieces(joined, pieces, found)]

    def json(self, text: str, where: str) -> str:
        """A JSON document's text with every string redacted; the same text when no rule can
        match anywhere in it (most records: one pass over its bytes)."""
        if self._home is None and not secrets.json_may_hold_secrets(text.encode("utf-8", "surrogatepass")):
            return text
        before = len(self.masked)
        redacted = self.value(orjson.loads(text), where)
        return text if self._home is None and len(self.masked) == before else orjson.dumps(redacted).decode()

    def envelope(self, envelope: Mapping[str, Any]) -> dict[str, Any]:
        """A v1.2 export envelope with every record redacted (it stays schema-valid)."""
        redacted: dict[str, Any] = {"schema_version": envelope["schema_version"]}
        redacted["session"] = self.value(envelope["session"], "session")
        for key in ("segments", "actors", "turns"):
            redacted[key] = [self.value(record, f"{key}[{index}]") for index, record in enumerate(envelope[key])]
        redacted["steps"] = [self.value(step, f"step #{step['seq']} {step['id']}") for step in envelope["steps"]]
        return redacted

    def dataclass(self, value: T, where: str) -> T:
        """A frozen dataclass with its string fields redacted."""
        changes = {
            f.name: self.text(getattr(value, f.name), f"{where} {f.name}")
            for f in fields(value)  # type: ignore[arg-type]
            if isinstance(getattr(value, f.name), str)
        }
        return replace(value, **changes)  # type: ignore[type-var]


def given_away(value: Any) -> dict[str, str]:
    """The secrets a pair in ``value`` (a JSON-like tree) gives away (``{"api_key": "…"}``),
    each with its kind: ``value`` masks them wherever they stand as a word in the tree, so a
    text cut from it (a search snippet) must too."""
    scratch = Redactor()
    scratch.value(value, "")
    return scratch._paired


def _as_word(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])")


def _words_masked(value: Any, words: re.Pattern[str], mark: str) -> Any:
    """``value`` (a JSON-like tree) with every match of ``words`` in its strings replaced by ``mark``."""
    if isinstance(value, str):
        return words.sub(mark, value)
    if isinstance(value, dict):
        return {key: _words_masked(item, words, mark) for key, item in value.items()}
    if isinstance(value, list):
        return [_words_masked(item, words, mark) for item in value]
    return value


class _Span(NamedTuple):
    start: int
    end: int
    kind: str


def _in_cut_fields(fields: Sequence[str], limit: int, words: Mapping[str, str]) -> list[_Span]:
    """The secrets of each whole field, and each of ``words`` where it stands as a word (as is,
    or as a JSON text of the record's raw input holds it), placed in the fields cut to ``limit``
    and joined by newlines (the part of one the cut leaves)."""
    found: list[_Span] = []
    at = 0
    for part in fields:
        kept = min(len(part), limit)
        spans = [_Span(secret.start, secret.end, secret.kind) for secret in find_secrets(part)]
        for word, kind in words.items():
            for form in dict.fromkeys((word, orjson.dumps(word).decode()[1:-1])):
                for match in _as_word(form).finditer(part):
                    if all(match.end() <= span.start or match.start() >= span.end for span in spans):
                        spans.append(_Span(match.start(), match.end(), kind))
        found += [
            _Span(at + span.start, at + min(span.end, kept), span.kind) for span in sorted(spans) if span.start < kept
        ]
        at += kept + 1
    return found


def _folded(text: str) -> tuple[str, list[int]]:
    """``one_line(text)`` and, for each of its characters, the position in ``text`` it comes from."""
    out: list[str] = []
    origins: list[int] = []
    space = -1
    for position, char in enumerate(text):
        if char.isspace():
            space = position if space < 0 else space
            continue
        if space >= 0 and out:
            out.append(" ")
            origins.append(space)
        space = -1
        shown = printable(char)
        out.append(shown)
        origins.extend([position] * len(shown))
    return "".join(out), origins


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
