"""Split a shell command line into the simple commands a shell would run (tree-sitter-bash).

A regular expression over the whole line cannot tell ``rm -rf build`` from
``echo "rm -rf /"``, nor see the ``curl`` inside ``bash <(curl …)``; a real parser
can. Each simple command comes back with the words it would be given (quotes
removed, expansions kept as written), the commands whose output reaches its
standard input (earlier pipeline stages, ``< <(…)``, ``<<< "$(…)"``), the commands
substituted into its words (``$(…)``, backticks, ``<(…)``), any here-document text, the
files its redirects write or read and the function it is defined in. Commands nested
anywhere (substitutions, subshells, loops, functions, ``export``) are listed too, and so
are the commands a command runs (``postrun.review.scripts``: ``bash -c "…"`` behind any
wrapper, ``eval``, ``ssh host …``, text piped into a shell, ``find -exec``). Pure: text in,
tuples out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

import tree_sitter
import tree_sitter_bash

from postrun.review.interpreters import code_runs
from postrun.review.scripts import SHELLS, embedded_commands, scripts

__all__ = ["SHELLS", "Command", "split_commands"]

# `bash -c "bash -c '…'"` nests; past this depth the inner text is left as words.
_MAX_DEPTH = 4
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_DECLARATIONS = frozenset({"declaration_command", "unset_command"})
_OVERWRITES = frozenset({">", ">|", "&>"})
_APPENDS = frozenset({">>", "&>>"})
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
    writes: tuple[str, ...] = ()  # files its redirects overwrite (`>`, `>|`, `&>`)
    appends: tuple[str, ...] = ()  # files they append to (`>>`, `&>>`)
    reads: tuple[str, ...] = ()  # files its standard input is redirected from (`< file`)
    function: str = ""  # the function whose body it is in

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` -> ``rm``), empty for a bare assignment."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""


class _Redirects(NamedTuple):
    feeding: tuple[Command, ...]  # commands whose output the redirects feed to standard input
    stdin_text: str
    writes: tuple[str, ...]
    appends: tuple[str, ...]
    reads: tuple[str, ...]
    # What a here-document's line goes on with (`cat <<EOF | sh`, `cat <<EOF && make`): each
    # with whether the command's output feeds it; walked once the command is known.
    after: tuple[tuple[tree_sitter.Node, bool], ...] = ()


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
            _add_runs(found[-1], depth, found)
        return found
    # A parser is cheap to make and not safe to share between threads: one per call.
    tree = tree_sitter.Parser(_language()).parse(text.encode("utf-8", "surrogatepass"))
    _walk(tree.root_node, (), depth, found)
    return found


def _walk(node: tree_sitter.Node, upstream: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    kind = node.type
    if kind == "command":
        _command(node, upstream, depth, found)
    elif kind == "pipeline":
        feeding = list(upstream)
        for stage in node.named_children:
            start = len(found)
            _walk(stage, tuple(feeding), depth, found)
            feeding.extend(found[start:])
    elif kind == "redirected_statement":
        _redirected(node, upstream, depth, found)
    elif kind in _DECLARATIONS:
        _declaration(node, upstream, depth, found)
    elif kind == "function_definition":
        _function(node, upstream, depth, found)
    else:
        for child in node.named_children:
            _walk(child, upstream, depth, found)


def _redirected(node: tree_sitter.Node, upstream: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    """``body < <(…)``, ``body <<EOF``, ``body <<< "…"``, ``body > file``: what the redirects
    feed the body and where they send its output (a bare ``> file`` is a command without words)."""
    position = len(found)
    redirects = _redirects(node.children_by_field_name("redirect"), depth, found)
    body = node.child_by_field_name("body")
    # `cd x && python3 - <<EOF`: the parser gives the redirects to the whole list, where the
    # shell gives them to its last command; the commands before it are walked as they are.
    while body is not None and body.type == "list" and body.named_children:
        *first, body = body.named_children
        for child in first:
            _walk(child, upstream, depth, found)
    if body is not None and body.type == "command":
        _command(body, upstream, depth, found, redirects)
        return
    # A bare `> file`, or `{ …; } > file`, `while …; done < file`: the redirect is a command of its own.
    if redirects.writes or redirects.appends or redirects.reads:
        found.insert(position, Command((), writes=redirects.writes, appends=redirects.appends, reads=redirects.reads))
    if body is not None:
        _walk(body, (*upstream, *redirects.feeding), depth, found)
    _walk_after(redirects, (), depth, found)


def _walk_after(redirects: _Redirects, command: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    for node, fed in redirects.after:
        _walk(node, command if fed else (), depth, found)


def _redirects(redirects: list[tree_sitter.Node], depth: int, found: list[Command]) -> _Redirects:
    """What the redirects feed to standard input (commands, here-document text, files) and
    the files they write.

    Commands in output redirects (``> >(tee …)``) are listed in ``found`` but feed nothing.
    """
    feeding: list[Command] = []
    stdin_text: list[str] = []
    files: dict[str, list[str]] = {"<": [], ">": [], ">>": []}
    after: list[tuple[tree_sitter.Node, bool]] = []
    pending = list(redirects)
    while pending:
        redirect = pending.pop(0)
        start = len(found)
        herestring = redirect.type == "herestring_redirect"
        operator = next((child.type for child in redirect.children if not child.is_named), "")
        for part in redirect.named_children:
            if part.type == "heredoc_body":
                stdin_text.append(_text(part))
                continue
            if redirect.type == "heredoc_redirect" and part.type in _REDIRECTS:
                pending.append(part)  # `cat <<EOF > file`: the command's own redirect
                continue
            if redirect.type == "heredoc_redirect" and part.type not in ("heredoc_start", "heredoc_end"):
                after.append((part, part.type == "pipeline"))
                continue
            if herestring:
                stdin_text.append(_word(part))
            elif (
                redirect.type == "file_redirect" and part.type != "file_descriptor" and part.type not in _SUBSTITUTIONS
            ):
                kind = ">" if operator in _OVERWRITES else ">>" if operator in _APPENDS else operator
                files.get(kind, []).append(_word(part))
            _walk(part, (), depth, found)
        if herestring or (redirect.type == "file_redirect" and operator == "<"):
            feeding.extend(found[start:])
    return _Redirects(
        tuple(feeding), "\n".join(stdin_text), tuple(files[">"]), tuple(files[">>"]), tuple(files["<"]), tuple(after)
    )


def _command(
    node: tree_sitter.Node,
    upstream: tuple[Command, ...],
    depth: int,
    found: list[Command],
    outer: _Redirects | None = None,
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
    own = _redirects(redirects, depth, found)
    parts = (own,) if outer is None else (outer, own)
    command = Command(
        tuple(argv),
        (*upstream, *(c for part in parts for c in part.feeding)),
        tuple(nested),
        "\n".join(part.stdin_text for part in parts if part.stdin_text),
        tuple(path for part in parts for path in part.writes),
        tuple(path for part in parts for path in part.appends),
        tuple(path for part in parts for path in part.reads),
    )
    found[position] = command
    _add_runs(command, depth, found)
    for part in parts:
        _walk_after(part, (*upstream, command), depth, found)


def _declaration(node: tree_sitter.Node, upstream: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    """``export A=1``, ``unset HISTFILE``, ``local x``: a command whose words are as written."""
    argv: list[str] = []
    nested: list[Command] = []
    position = len(found)
    found.append(Command(()))
    for child in node.children:
        nested.extend(_inner_commands(child, depth, found))
        argv.append(_text(child) if child.type == "variable_assignment" else _word(child))
    found[position] = Command(tuple(argv), upstream, tuple(nested))


def _function(node: tree_sitter.Node, upstream: tuple[Command, ...], depth: int, found: list[Command]) -> None:
    """A function's body, each of its commands knowing the function's name (a fork bomb calls itself)."""
    start = len(found)
    name = node.child_by_field_name("name")
    for child in node.named_children:
        if child != name:
            _walk(child, upstream, depth, found)
    if name is not None:
        for index in range(start, len(found)):
            if not found[index].function:
                found[index] = found[index]._replace(function=_text(name))


def _add_runs(command: Command, depth: int, found: list[Command]) -> None:
    """The commands ``command`` runs: of its scripts (``sh -c '…'``, ``eval '…'``, ``ssh host '…'``,
    text piped into a shell, an interpreter's ``os.system('…')``) and those it starts itself
    (``find -exec``, an interpreter's ``subprocess.run([…])``)."""
    if depth >= _MAX_DEPTH:
        return
    code_scripts, code_commands = code_runs(command)
    for script in (*scripts(command), *code_scripts):
        found.extend(_parse(script, depth + 1))
    for argv in (*embedded_commands(command), *code_commands):
        found.append(Command(argv))
        _add_runs(found[-1], depth + 1, found)


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
