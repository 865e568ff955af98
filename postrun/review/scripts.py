"""What a simple command runs besides itself: the shell text it hands a shell, and the
commands it starts (``postrun.review.shell`` splits both into commands of their own).

A rule that reads ``argv`` alone cannot see ``rm -rf /`` in ``sudo bash -c "rm -rf /"``,
``echo 'rm -rf /' | sh`` or ``find / -exec rm -rf {} \\;``; with these, each of them is a
command the rules judge like any other. Pure: words in, scripts and words out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from postrun.review.argv import base, unwrapped

if TYPE_CHECKING:
    from postrun.review.shell import Command

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})  # programs that run shell text
# Options of a shell that take the next word as their value (`bash -o pipefail -c …`).
_SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_SSH_VALUE_OPTIONS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
_SU = frozenset({"su", "runuser", "sg"})  # `su [user] -c '…'` runs its text in the user's shell
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_PASS_THROUGH = frozenset({"tee", "cat", "head", "tail"})  # standard input to output, as it came
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def scripts(command: Command) -> list[str]:
    """The shell text ``command`` runs: ``sh -c '…'`` (behind any wrapper), ``eval '…'``,
    ``su -c '…'``, ``ssh host '…'``, ``watch '…'``, and the text a shell reads on its
    standard input when that text is known (a here-document, ``echo '…' | sh``)."""
    argv = unwrapped(command.argv)
    if not argv:
        return []
    name = base(argv[0])
    if name == "eval":
        return [" ".join(argv[1:])] if len(argv) > 1 else []
    if name in SHELLS:
        script, reads_stdin = _shell_script(argv)
        if script is not None:
            return [script]
        text = fed_text(command) if reads_stdin else None
        return [text] if text else []
    if name in _SU:
        return [value for option, value in _pairs(argv[1:]) if option in ("-c", "--command")][:1]
    if name == "ssh":
        remote = _ssh_remote(argv[1:])
        return [" ".join(remote)] if remote else []
    if name == "watch":
        operands = _after_options(argv[1:], {"-n", "--interval", "-d"})
        return [" ".join(operands)] if operands else []
    return []


def embedded_commands(command: Command) -> list[tuple[str, ...]]:
    """The commands ``command`` starts with words of its own: ``find … -exec rm -rf {} \\;``."""
    argv = unwrapped(command.argv)
    if not argv or base(argv[0]) != "find":
        return []
    found: list[tuple[str, ...]] = []
    index = 1
    while index < len(argv):
        if argv[index] in _FIND_EXEC:
            end = index + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            if end > index + 1:
                found.append(tuple(argv[index + 1 : end]))
            index = end
        index += 1
    return found


def reads_stdin(argv: tuple[str, ...]) -> bool:
    """An interpreter with no script of its own (``sh``, ``sh -s``, ``python3 -``) runs its input."""
    args = argv[1:]
    if any(arg in ("-c", "-m", "-e", "-p", "--eval", "--print") for arg in args):
        return False
    operands = [arg for arg in args if not arg.startswith("-") or arg == "-"]
    return not operands or operands[0] == "-"


def fed_text(command: Command) -> str | None:
    """The text ``command`` reads on its standard input, when the line says it: a here-document
    or here-string, or what ``echo``/``printf`` (or ``cat`` of a here-document) print into its
    pipe, through ``tee`` and ``cat``. None when it comes from elsewhere (a file, a download)."""
    if command.stdin_text:
        return command.stdin_text
    for feeder in reversed(command.upstream):
        argv = unwrapped(feeder.argv)
        name = base(argv[0]) if argv else ""
        if name == "echo":
            return _echoed(argv[1:])
        if name == "printf" and len(argv) > 1:
            return _unescape(argv[1])
        if feeder.stdin_text and name == "cat":
            return feeder.stdin_text
        operands = any(not arg.startswith("-") for arg in argv[1:])
        if not (name == "tee" or (name in _PASS_THROUGH and not operands)):
            return None
    return None


def _shell_script(argv: tuple[str, ...]) -> tuple[str | None, bool]:
    """(the script of ``sh [options] -c SCRIPT``, whether the shell reads its standard input)."""
    c_mode = stdin = False
    index = 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if word in _SHELL_VALUE_OPTIONS:
            index += 2
            continue
        if len(word) < 2 or word[0] not in "-+":
            break
        if word[0] == "-" and not word.startswith("--"):
            c_mode = c_mode or "c" in word[1:]
            stdin = stdin or "s" in word[1:]
        index += 1
    operands = argv[index:]
    if c_mode:
        return (operands[0] if operands else None), False
    return None, stdin or not operands


def _pairs(args: tuple[str, ...]) -> list[tuple[str, str]]:
    """(option, value) of ``-c value``, ``--command value`` and ``--command=value``."""
    found = []
    for index, word in enumerate(args):
        if word.startswith("--") and "=" in word:
            option, value = word.split("=", 1)
            found.append((option, value))
        elif word.startswith("-") and index + 1 < len(args):
            found.append((word, args[index + 1]))
    return found


def _ssh_remote(args: tuple[str, ...]) -> tuple[str, ...]:
    """The remote command of ``ssh [options] host command…``."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        word = args[index]
        index += 2 if len(word) == 2 and word[1] in _SSH_VALUE_OPTIONS else 1
    return args[index + 1 :]


def _after_options(args: tuple[str, ...], takes_value: set[str]) -> tuple[str, ...]:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in takes_value else 1
    return args[index:]


def _echoed(args: tuple[str, ...]) -> str:
    index = 0
    escapes = False
    while index < len(args) and args[index] in ("-n", "-e", "-E", "-ne", "-en"):
        escapes = escapes or "e" in args[index]
        index += 1
    text = " ".join(args[index:])
    return _unescape(text) if escapes else text


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            out.append(_ESCAPES.get(following, "\\" + following))
        else:
            out.append(char)
    return "".join(out)
