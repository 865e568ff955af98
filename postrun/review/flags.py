"""Risk flags of one step: every rule applied, in one fixed order, each a pure test over the step.

A flag is a v1.2 ``Flag`` dict (``kind``, ``severity``, ``reason``); the reason quotes
the rule and the part that matched (a secret only masked). Where each rule lives:

- the dangerous-command rules (and ``cat .env`` and the like): one table in
  ``postrun.review.command_rules``, over every simple command ``postrun.review.shell``
  splits a command line into (so ``echo "rm -rf /"`` is not a deletion while
  ``bash -c "rm -rf /"`` is), read past its wrappers by ``postrun.review.argv``;
- which paths hold credentials, and which are outside the workspace:
  ``postrun.review.path_rules``;
- secrets: ``postrun.review.secrets``, looked for where the redactor looks
  (``postrun.review.structure``: keys, a value beside its key, a list of lines together);
- reading or editing a credentials file, a read or edit outside the workspace, a rejected
  or failed step: ``step_flags`` here, which applies all of them.

A read step stores no content, yet what it returned went to the agent's model: the adapter
hands that text over beside the step (``MappedSession.read_texts``) and its secrets flag the
read step, masked, like a command's output; the text itself is never kept.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

from postrun.review import secrets
from postrun.review.argv import unwrapped
from postrun.review.command_rules import COMMAND_RULES, QUOTED_CHARS, Severity
from postrun.review.path_rules import is_sensitive_path, outside_workspace, plain_path
from postrun.review.run_rules import files_read
from postrun.review.shell import split_commands
from postrun.review.structure import tree_secrets

# Bump when a rule changes (here or in the modules named above); with the secret rules'
# versions it names the rules a stored step was flagged under (stored sessions are
# re-flagged when it differs).
_FLAG_RULES = "10"  # 8-10: interpreter code (tree deletes, what it runs), credentials-file variables
RULES_VERSION = f"flags-{_FLAG_RULES}+secrets-{secrets.RULES_VERSION}+detect-secrets-{secrets.DETECT_SECRETS_VERSION}"

FLAG_KINDS = ("dangerous_command", "secret_in_output", "outside_workspace", "sensitive_read", "rejected", "failed")
Flag = dict[str, str]
READ_TEXT = "the text read"  # where a secret of a read's text was found, as a reason names it


def step_flags(
    step: Mapping[str, Any], workspace_root: str, blob: bytes | None = None, read_text: str | None = None
) -> list[Flag]:
    """Every flag of one v1.2 step, in rule order; ``blob`` is the step's JSON when the caller
    has it (a cheaper first look for secrets), ``read_text`` what a read step's read returned.

    The step's own ``flags`` are ignored, but for those a read's text gave when that text is
    not given (a stored step flagged again has none): they are kept as they are."""
    found: list[Flag] = []
    payload = step["payload"]
    kind = step["type"]
    if kind == "command" and isinstance(payload.get("command"), str):
        flags, reads = _command_facts(payload["command"])
        found += flags
        found += _reads_outside(reads, payload.get("cwd"), workspace_root)
    if kind in ("read", "edit"):
        path = payload["path"]
        if is_sensitive_path(path):
            verb = "reads" if kind == "read" else "edits"
            found.append(
                _flag("sensitive_read", "warn", f"{verb} a credentials file: {secrets.quote(path, QUOTED_CHARS)}")
            )
        if outside_workspace(path, workspace_root):
            reason = f"{kind} outside the workspace {workspace_root}: {secrets.quote(path, QUOTED_CHARS)}"
            found.append(_flag("outside_workspace", "warn", reason))
    found += _secret_flags(step, blob)
    if read_text is not None:
        found += _text_secret_flags(READ_TEXT, read_text)
    elif kind == "read":
        found += [flag for flag in step.get("flags", ()) if _from_read_text(flag)]
    if step["decision"] == "rejected":
        found.append(_flag("rejected", "warn", "rejected by the user"))
    if step["outcome"] == "failed":
        found.append(_flag("failed", "info", _failure(step)))
    return _unique(found)


def _command_facts(line: str) -> tuple[list[Flag], tuple[str, ...]]:
    """The flags of a command line's own rules, and the files it reads."""
    found, reads = _line_facts(line) if len(line) <= _CACHED_LINE_CHARS else _facts_of_line(line)
    return [_flag(kind, severity, reason) for kind, severity, reason in found], reads


# Agents run the same commands again and again (tests, builds, git status); parsing and
# testing one costs about 15 µs. Longer lines (heredocs, scripts) rarely repeat.
_CACHED_LINE_CHARS = 1024
_LineFacts = tuple[tuple[tuple[str, Severity, str], ...], tuple[str, ...]]


@functools.lru_cache(maxsize=1024)
def _line_facts(line: str) -> _LineFacts:
    return _facts_of_line(line)


def _facts_of_line(line: str) -> _LineFacts:
    found = []
    reads: list[str] = []
    in_line: list[secrets.Secret] | None = None
    for command in split_commands(line):
        argv = unwrapped(command.argv)
        for rule in COMMAND_RULES:
            matched = rule.test(command, argv)
            if matched is not None:
                in_line = secrets.find_secrets(line) if in_line is None else in_line
                found.append((rule.kind, rule.severity, f"{rule.name}: {_quoted(matched, in_line)}"))
        reads += files_read(command, argv)
    return tuple(found), tuple(reads)


def _quoted(matched: str, in_line: list[secrets.Secret]) -> str:
    """What a rule matched, as its reason quotes it: the secrets of its command line masked
    (the shell took their quotes away, so the words alone may not show them; inside double
    quotes it also took the backslash from ``\\$``, ``\\```, ``\\"`` and ``\\\\``), then cut."""
    for secret in sorted(in_line, key=lambda found: len(found.value), reverse=True):
        for form in dict.fromkeys((secret.value, _UNESCAPED.sub(r"\1", secret.value))):
            matched = matched.replace(form, secret.masked)
    return secrets.quote(matched, QUOTED_CHARS)


_UNESCAPED = re.compile(r'\\([$`"\\])')  # what a backslash escapes inside a shell's double quotes


def _reads_outside(reads: tuple[str, ...], cwd: Any, workspace_root: str) -> list[Flag]:
    """A command's reads outside the workspace, as a read step's are (a relative path is the
    command's own folder's); a device (``/dev/null``) is no file read."""
    here = cwd if isinstance(cwd, str) and cwd.startswith("/") else workspace_root
    found = []
    for path in reads:
        plain = plain_path(path)  # `$HOME/.aws/credentials` is no path below the command's folder
        full = plain if plain.startswith(("/", "~")) or not here else posixpath.join(here, plain)
        if not full.startswith("/dev/") and outside_workspace(full, workspace_root):
            reason = f"command reads outside the workspace {workspace_root}: {secrets.quote(path, QUOTED_CHARS)}"
            found.append(_flag("outside_workspace", "warn", reason))
    return found


def _failure(step: Mapping[str, Any]) -> str:
    if "error" in step:
        return f"{step['error']['type']}: {secrets.quote(step['error']['message'], QUOTED_CHARS)}"
    exit_code = step["payload"].get("exit_code")
    return f"exit {exit_code}" if exit_code is not None else "the step failed"


def _secret_flags(step: Mapping[str, Any], blob: bytes | None) -> list[Flag]:
    # One quick look at all of them first: most steps hold no keyword of any rule.
    if blob is not None and not secrets.json_may_hold_secrets(blob):
        return []
    payload = step["payload"]
    if not secrets.may_hold_secrets("\n".join(_words(payload))) and (
        "error" not in step or not secrets.may_hold_secrets(step["error"]["message"])
    ):
        return []
    # Where the redactor masks (a token used as a key, a value beside its key, a patch's lines
    # together): README, the flags and the redactor are one set of rules.
    found = []
    for where, matches in tree_secrets(payload):
        found += _grouped(where, matches)
    if "error" in step:
        found += _text_secret_flags("error", step["error"]["message"])
    return found


def _words(value: Any) -> Iterator[str]:
    """Every string and key of a JSON-like tree."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _words(item)
    elif isinstance(value, list):
        for item in value:
            yield from _words(item)


_PLACE_CHARS = 300


def _text_secret_flags(where: str, text: str) -> list[Flag]:
    return _grouped(where, secrets.find_secrets(text))


def _grouped(where: str, found: list[secrets.Secret]) -> list[Flag]:
    """One flag per rule of the secrets ``found`` in one text at ``where``."""
    by_rule: dict[secrets.SecretRule, list[secrets.Secret]] = {}
    for secret in found:
        by_rule.setdefault(secret.rule, []).append(secret)
    if not by_rule:
        return []
    # The field's path names its keys, and a key may be a token itself (a map of tokens to what
    # they grant): it is quoted as any secret in a reason is, masked.
    place = secrets.quote(where, _PLACE_CHARS)
    flags = []
    for rule, matches in by_rule.items():
        more = f" and {len(matches) - 1} more" if len(matches) > 1 else ""
        reason = f"{rule.label} ({rule.source}) in {place}: {matches[0].masked}{more}"
        flags.append(_flag("secret_in_output", "danger", reason))
    return flags


def _from_read_text(flag: Mapping[str, str]) -> bool:
    return flag["kind"] == "secret_in_output" and f") in {READ_TEXT}: " in flag["reason"]


def _flag(kind: str, severity: Severity, reason: str) -> Flag:
    return {"kind": kind, "severity": severity, "reason": reason}


def _unique(flags: list[Flag]) -> list[Flag]:
    if len(flags) < 2:
        return flags  # most steps have none
    seen: set[tuple[str, str]] = set()
    kept = []
    for flag in flags:
        key = (flag["kind"], flag["reason"])
        if key not in seen:
            seen.add(key)
            kept.append(flag)
    return kept
