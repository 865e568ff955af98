"""What an interpreter is given to run, and the commands that code starts.

``python3 -c "…"``, ``node -e "…"``, ``cd repo && python3 - <<EOF``: the code is the word after
the code option, or the text the interpreter reads on its input. A rule reads the code itself
(``delete_rules.interpreter_deletes_tree``), and the shell splitter lists the commands it
starts as commands of their own: ``os.system('rm -rf src')`` and
``subprocess.run(['git', 'push', '--force'])`` are judged as ``rm -rf src`` and
``git push --force`` are. Only literal strings are read; a value the code computes stands as
``(a value)``. Pure: words in, code and commands out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from postrun.review.argv import INTERPRETER, base, unwrapped
from postrun.review.scripts import fed_text, reads_stdin

if TYPE_CHECKING:
    from postrun.review.shell import Command

# The options after which an interpreter's word is code: python -c, node/bun/perl/ruby -e, node -p,
# php -r, also last of a cluster of short options (`python3 -Ic`, `perl -le`).
_CODE_OPTION = re.compile(r"--eval|--print|-[A-Za-z]*[ceEpr]")
COMPUTED = "(a value)"  # what stands for a word the code computes
# The calls that run shell text, and those that start a program with words of their own, per
# family of interpreters, each found by its name and read within bounds.
_STRING = r"""(?:'(?P<single>[^'\\\n]{0,4000}+)'|"(?P<double>[^"\\\n]{0,4000}+)")"""
_LIST = r"\[(?P<items>[^\]\n]{0,4000}+)\]"
_OPEN = r"[ \t]{0,8}\([ \t]{0,8}"
_SHELL_TEXT = {
    "python": re.compile(
        r"\b(?:os\.system|os\.popen|subprocess\.(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput))"
        + _OPEN
        + _STRING
    ),
    "node": re.compile(r"\b(?:execSync|exec)" + _OPEN + _STRING),
    "ruby": re.compile(r"\b(?:system|exec|spawn)" + _OPEN + _STRING),
    "perl": re.compile(r"\b(?:system|exec|qx)" + _OPEN + _STRING),
    "php": re.compile(r"\b(?:shell_exec|system|exec|passthru|popen|proc_open)" + _OPEN + _STRING),
}
_PROGRAM_WORDS = {
    "python": re.compile(r"\bsubprocess\.(?:run|call|check_call|check_output|Popen)" + _OPEN + _LIST),
    "node": re.compile(
        r"\b(?:spawnSync|spawn|execFileSync|execFile)" + _OPEN + r"(?P<program>'[^'\n]{1,200}+'|\"[^\"\n]{1,200}+\")"
        r"[ \t]{0,8},[ \t]{0,8}" + _LIST
    ),
}
_ITEMS = re.compile(r"""(?:'[^'\n]*'|"[^"\n]*"|[^,'"])+""")  # a list's items: commas inside strings are theirs
_ITEM = re.compile(r"""\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*""")
_FAMILIES = (
    *(("python", "python"), ("pypy", "python")),
    *(("node", "node"), ("bun", "node"), ("deno", "node")),
    *(("ruby", "ruby"), ("perl", "perl"), ("php", "php")),
)


@dataclass(frozen=True, slots=True)
class Code:
    """What an interpreter runs: the code words it was given, and the text fed to its input."""

    words: tuple[str, ...] = ()
    fed: str | None = None

    @property
    def texts(self) -> tuple[str, ...]:
        return (*self.words, self.fed) if self.fed else self.words


def interpreter_code(command: Command, argv: tuple[str, ...]) -> Code:
    """The code ``argv`` (``command``'s words past its wrappers) gives an interpreter; none
    when it is not an interpreter's."""
    if not argv or not INTERPRETER.fullmatch(base(argv[0])):
        return Code()
    args = argv[1:]
    words = [args[index + 1] for index, word in enumerate(args[:-1]) if _CODE_OPTION.fullmatch(word)]
    if base(argv[0]) == "deno" and args[:1] == ("eval",):
        words += [word for word in args[1:] if not word.startswith("-")][:1]
    return Code(tuple(words), fed_text(command) if reads_stdin(argv) else None)


def code_runs(command: Command) -> tuple[list[str], list[tuple[str, ...]]]:
    """What the interpreter's code runs: the shell text it hands a shell (``os.system('…')``,
    ``execSync('…')``), and the programs it starts with words of their own
    (``subprocess.run(['rm', '-rf', 'src'])``, ``spawnSync('rm', ['-rf', 'src'])``)."""
    argv = unwrapped(command.argv)
    family = _family(argv)
    shell_text, program_words = _SHELL_TEXT.get(family), _PROGRAM_WORDS.get(family)
    if shell_text is None:
        return [], []  # every family that starts programs also hands text to a shell
    texts = interpreter_code(command, argv).texts
    scripts = [
        found["single"] if found["single"] is not None else found["double"]
        for text in texts
        for found in shell_text.finditer(text)
    ]
    calls = [call for text in texts for call in program_words.finditer(text)] if program_words is not None else []
    return scripts, [words for call in calls if (words := _started(call))]


def _started(call: re.Match[str]) -> tuple[str, ...]:
    """The words of the program a call starts: its program's name, if given apart, and its list."""
    program = (call["program"][1:-1],) if "program" in call.groupdict() else ()
    items = (item[0] for item in _ITEMS.finditer(call["items"]) if item[0].strip())
    return (*program, *(_word(item) for item in items))


def _family(argv: tuple[str, ...]) -> str:
    name = base(argv[0]) if argv else ""
    if not INTERPRETER.fullmatch(name):
        return ""
    return next(family for prefix, family in _FAMILIES if name.startswith(prefix))


def _word(item: str) -> str:
    literal = _ITEM.fullmatch(item)
    if literal is None:
        return COMPUTED
    return literal[1] if literal[1] is not None else literal[2]
