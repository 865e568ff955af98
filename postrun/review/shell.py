"""Split a shell command line into the simple commands a shell would run (tree-sitter-bash).

A regular expression over the whole line cannot tell ``rm -rf build`` from
``echo "rm -rf /"``, nor see the ``curl`` inside ``bash <(curl …)``; a real parser
can. Each simple command comes back with the words it would be given (quotes
removed, expansions kept as written), the commands whose output reaches its
standard input (earlier pipeline stages, ``< <(…)``, ``<<< "$(…)"``), the commands
substituted into its words (``$(…)``, backticks, ``<(…)``) and any here-document
text. Commands nested anywhere (substitutions, subshells, loops, ``bash -c "…"``,
``eval "…"``) are listed too. Pure: text in, tuples out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

import tree_sitter
import tree_sitter_bash

# `bash -c "bash -c '…'"` nests; past this depth the inner text is left as words.
_MAX_DEPTH = 4
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})  # programs that run shell text
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
# A line of only these characters (no quote, escape, expansion, glob, operator or comment) is
# one simple command whose words are its space-separated parts, unless a word is one the
# grammar gives a meaning of its own: most lines agents run are, and the parser is spared.
_PLAIN_LINE = re.compile(r"[A-Za-z0-9 _./,:-]+")
_GRAMMAR_WORDS = frozenset(
    {
        *("if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until"),
        *("do", "done", "in", "function", "time", "coproc"),
        *("declare", "typeset", "export", "readonly", "local", "unset", "unsetenv"),
    }
)


# Made for every command a step runs (a NamedTuple: built several times faster than a frozen dataclass).
class Command(NamedTuple):
    """One simple command: ``argv`` as the shell would pass it, and where its input comes from."""

    argv: tuple[str, ...]
    upstream: tuple[Command, ...] = ()  # commands whose output is this one's standard input
    substituted: tuple[Command, ...] = ()  # commands whose output becomes part of its words
    stdin_text: str = ""  # here-document or here-string text

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` -> ``rm``), empty for a bare assignment."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""


@functools.cache
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_bash.language())


def split_commands(line: str) -> tuple[Command, ...]:
    """Every simple command ``line`` holds, outermost first, in source order."""
    return tuple(_parse(line, 0))


def _parse(text: str, depth: int) -> list[Command]:
    found: list[Command] = []
    words = text.split(" ") if _PLAIN_LINE.fullmatch(text) else None
    if words is not None and _GRAMMAR_WORDS.isdisjoint(words):
        argv = tuple(word for word in words if word)
        if argv:
            found.append(Command(argv))
            _add_inline_script(found[-1], depth, found)
        return found
    # A parser is cheap to make and not safe to share between threads: one per call.
    tree = tree_sitter.Parser(_language()).parse(text.encode("utf-8", "surrogatepass"))
    _walk(tree.root_node, (), depth, found)
    return found


def _walk(node: tree_sitter.Node, upstream: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    kind = node.type
    if kind == "command":
        _command(node, upstream, "", depth, found)
    elif kind == "pipeline":
        feeding = list(upstream)
        for stage in node.named_children:
            start = len(found)
            _walk(stage, tuple(feeding), depth, found)
            feeding.extend(found[start:])
    elif kind == "redirected_statement":
        _redirected(node, upstream, depth, found)
    else:
        for child in node.named_children:
            _walk(child, upstream, depth, found)


def _redirected(node: tree_sitter.Node, upstream: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    """``body < <(…)``, ``body <<EOF``, ``body <<< "…"``: what the redirects feed the body."""
    feeding, stdin_text = _inputs(node.children_by_field_name("redirect"), depth, found)
    body = node.child_by_field_name("body")
    if body is None:
        return
    if body.type == "command":
        _command(body, (*upstream, *feeding), stdin_text, depth, found)
    else:
        _walk(body, (*upstream, *feeding), depth, found)


def _inputs(redirects: list[tree_sitter.Node], depth: int, found: list[Command]) -> tuple[list[Command], str]:
    """The commands whose output the redirects feed to standard input, and here-document text.

    Commands in output redirects (``> >(tee …)``) are listed in ``found`` but feed nothing.
    """
    feeding: list[Command] = []
    stdin_text: list[str] = []
    for redirect in redirects:
        start = len(found)
        herestring = redirect.type == "herestring_redirect"
        for part in redirect.named_children:
            if part.type == "heredoc_body":
                stdin_text.append(_text(part))
            elif herestring:
                stdin_text.append(_word(part))
            _walk(part, (), depth, found)
        if herestring or (redirect.type == "file_redirect" and any(c.type == "<" for c in redirect.children)):
            feeding.extend(found[start:])
    return feeding, "\n".join(stdin_text)


def _command(
    node: tree_sitter.Node, upstream: tuple[Command, ...], stdin_text: str, depth: int, found: list[Command]
) -> None:
    argv: list[str] = []
    nested: list[Command] = []
    position = len(found)
    found.append(Command(()))  # placeholder: the command comes before what it holds
    redirects: list[tree_sitter.Node] = []
    for child in node.named_children:
        if child.type in _REDIRECTS:
            redirects.append(child)
            continue
        nested.extend(_inner_commands(child, depth, found))
        if child.type != "variable_assignment":
            argv.append(_word(child))
    feeding, own_text = _inputs(redirects, depth, found)
    stdin_text = "\n".join(text for text in (stdin_text, own_text) if text)
    command = Command(tuple(argv), (*upstream, *feeding), tuple(nested), stdin_text)
    found[position] = command
    _add_inline_script(command, depth, found)


def _add_inline_script(command: Command, depth: int, found: list[Command]) -> None:
    """The commands of ``command``'s inline script (``sh -c '…'``, ``eval '…'``), if any."""
    if depth < _MAX_DEPTH:
        script = _inline_script(command)
        if script is not None:
            found.extend(_parse(script, depth + 1))


def _inner_commands(node: tree_sitter.Node, depth: int, found: list[Command]) -> list[Command]:
    """The commands of every substitution inside ``node``, appended to ``found`` too."""
    start = len(found)
    for substitution in _substitutions(node):
        _walk(substitution, (), depth, found)
    return found[start:]


def _substitutions(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    if node.type in _SUBSTITUTIONS:
        yield node
        return
    for child in node.named_children:
        yield from _substitutions(child)


def _inline_script(command: Command) -> str | None:
    """The script text of ``sh -c '…'`` (any flags before ``-c``) or ``eval '…'``."""
    argv = command.argv
    if command.name == "eval":
        return " ".join(argv[1:]) or None
    if command.name not in SHELLS:
        return None
    for index, word in enumerate(argv[1:], start=1):
        if not word.startswith("-") or word.startswith("--"):
            continue
        if "c" in word[1:] and index + 1 < len(argv):
            return argv[index + 1]
    return None


def _word(node: tree_sitter.Node) -> str:
    """A word's value as the shell passes it: quotes removed, backslash escapes resolved,
    expansions and substitutions kept as written."""
    kind = node.type
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        return "".join(_unescape(_text(p), '"') if p.type == "string_content" else _text(p) for p in _parts(node))
    if kind == "word":
        return _unescape(_text(node), None)
    if kind in ("concatenation", "command_name"):
        return "".join(_word(child) for child in node.children)
    if kind == "ansi_c_string":
        return _text(node)[2:-1]
    return _text(node)


def _parts(string: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The inside of a double-quoted string (without its quotes)."""
    for child in string.children:
        if child.type != '"':
            yield child


def _unescape(text: str, quote: str | None) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append(char)
            continue
        following = next(chars, "")
        # Inside double quotes a backslash only escapes $ ` " \ and a newline.
        if quote is not None and following not in '$`"\\\n':
            out.append(char)
        if following != "\n":
            out.append(following)
    return "".join(out)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")
