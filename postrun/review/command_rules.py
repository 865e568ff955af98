"""The dangerous-command rules: one table (``COMMAND_RULES``), one test per rule.

Each test looks at one simple command as ``postrun.review.shell`` split it, with the
words its wrappers run (``postrun.review.argv``), and returns the words it matched
(quoted in the flag's reason) or None. ``postrun.review.flags`` applies the table to every
command a step runs. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from postrun.review.argv import base, git_command, positionals, short_flags, unwrapped
from postrun.review.path_rules import is_sensitive_path
from postrun.review.shell import SHELLS, Command
from postrun.text import one_line

Severity = Literal["info", "warn", "danger"]
QUOTED_CHARS = 120  # the most of a matched part a flag's reason quotes

# Deleting these is routine: build output and caches a build recreates.
ROUTINE_OUTPUT = frozenset({"node_modules", "dist", "build", ".venv", "target", "__pycache__"})
_SOURCING = frozenset({"eval", "source", "."})
_INTERPRETER = re.compile(r"(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php)")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "aria2c"})
_SEARCH_TOOLS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "git"})
_SQL_DESTRUCTIVE = re.compile(r"(?i)\b(?:drop\s+(?:table|database|schema)|truncate\s+table)\b")
_HARMLESS_DEVICES = re.compile(r"/dev/(?:null|zero|stdout|stderr|tty|fd/\d+)$")
_FILE_READERS = frozenset(
    {"cat", "less", "more", "head", "tail", "bat", "nl", "xxd", "strings", "base64", "source", "."}
)


@dataclass(frozen=True, slots=True)
class CommandRule:
    """A test over one simple command; ``test`` returns the words it matched, or None."""

    name: str  # the rule as a reason quotes it
    severity: Severity
    test: Callable[[Command, tuple[str, ...]], str | None]
    kind: str = "dangerous_command"


def _words(argv: tuple[str, ...]) -> str:
    return one_line(" ".join(argv), QUOTED_CHARS)


def _rm_recursive_force(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or base(argv[0]) != "rm":
        return None
    args = argv[1:]
    letters = short_flags(args)
    recursive = "r" in letters or "R" in letters or "--recursive" in args
    force = "f" in letters or "--force" in args
    targets = positionals(args)
    if not targets and command.name == "xargs":
        targets = ["(the paths xargs reads)"]
    if recursive and force and any(not _routine(target) for target in targets):
        return _words(argv)
    return None


def _routine(target: str) -> bool:
    path = target.rstrip("/")
    if path.endswith("/*"):
        path = path[:-2]
    return base(path) in ROUTINE_OUTPUT


def _git_push(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    git = git_command(argv)
    return git[1] if git is not None and git[0] == "push" else None


def _force_push(command: Command, argv: tuple[str, ...]) -> str | None:
    args = _git_push(argv)
    if args is None:
        return None
    forced = "--force" in args or "--mirror" in args or "f" in short_flags(args)
    if forced or any(arg.startswith("+") for arg in positionals(args)):
        return _words(argv)
    return None


def _lease_push(command: Command, argv: tuple[str, ...]) -> str | None:
    args = _git_push(argv)
    if args is None or _force_push(command, argv) is not None:
        return None
    if any(arg.startswith(("--force-with-lease", "--force-if-includes")) for arg in args):
        return _words(argv)
    return None


def _git_subcommand(
    name: str, check: Callable[[tuple[str, ...]], bool]
) -> Callable[[Command, tuple[str, ...]], str | None]:
    def test(command: Command, argv: tuple[str, ...]) -> str | None:
        git = git_command(argv)
        return _words(argv) if git is not None and git[0] == name and check(git[1]) else None

    return test


def _runs_code(argv: tuple[str, ...]) -> bool:
    name = base(argv[0]) if argv else ""
    return name in SHELLS or name in _SOURCING or bool(_INTERPRETER.fullmatch(name))


def _reads_stdin(argv: tuple[str, ...]) -> bool:
    """An interpreter with no script of its own (``sh``, ``sh -s``, ``python3 -``) runs its input."""
    args = argv[1:]
    if any(arg in ("-c", "-m", "-e", "-p", "--eval", "--print") for arg in args):
        return False
    operands = [arg for arg in args if not arg.startswith("-") or arg == "-"]
    return not operands or operands[0] == "-"


def _downloads(commands: tuple[Command, ...]) -> Command | None:
    return next((c for c in commands if base(unwrapped(c.argv)[0] if unwrapped(c.argv) else "") in _DOWNLOADERS), None)


def _download_to_shell(command: Command, argv: tuple[str, ...]) -> str | None:
    if not _runs_code(argv):
        return None
    download = _downloads(command.upstream) if _reads_stdin(argv) else None
    if download is None and command.substituted:
        name = base(argv[0])
        executes = (
            name in SHELLS or name in _SOURCING or any(arg.startswith("<(") or arg in ("-c", "-e") for arg in argv[1:])
        )
        download = _downloads(command.substituted) if executes else None
    if download is None:
        return None
    return f"{_words(download.argv)} -> {_words(argv)}"


def _destructive_sql(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or base(argv[0]) in _SEARCH_TOOLS:
        return None
    match = _sql_statement(" ".join(argv)) or _sql_statement(command.stdin_text)
    return one_line(match.group(0), QUOTED_CHARS) if match else None


def _sql_statement(text: str) -> re.Match[str] | None:
    # Either statement holds "drop" or "truncate", whose letters only their own two cases
    # match: most text holds neither, and the search is skipped.
    lowered = text.lower()
    if "drop" not in lowered and "truncate" not in lowered:
        return None
    return _SQL_DESTRUCTIVE.search(text)


def _drops_database(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = base(argv[0])
    words = list(argv)
    if name == "dropdb":
        return _words(argv)
    if "prisma" in words and words[words.index("prisma") + 1 : words.index("prisma") + 3] == ["migrate", "reset"]:
        return _words(argv)
    drops = any(word.startswith("db:drop") for word in words)
    if drops and any(base(word) in ("rails", "rake") for word in words):
        return _words(argv)
    return None


def _wipes_disk(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = base(argv[0])
    if name == "mkfs" or name.startswith("mkfs."):
        return _words(argv)
    if name == "dd":
        for arg in argv[1:]:
            if arg.startswith("of=/dev/") and not _HARMLESS_DEVICES.match(arg[3:]):
                return _words(argv)
    return None


def _elevated(command: Command, argv: tuple[str, ...]) -> str | None:
    raw = command.argv
    return _words(raw) if raw and base(raw[0]) in ("sudo", "doas") else None


def _world_writable(command: Command, argv: tuple[str, ...]) -> str | None:
    if argv and base(argv[0]) == "chmod" and any(arg in ("777", "0777", "a+rwx", "ugo+rwx") for arg in argv[1:]):
        return _words(argv)
    return None


def _publishes(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or base(argv[0]) not in ("npm", "pnpm", "yarn") or "--dry-run" in argv:
        return None
    operands = positionals(argv[1:])
    if operands[:1] == ["publish"] or operands[:2] == ["npm", "publish"]:
        return _words(argv)
    return None


def _prints_environment(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = base(argv[0])
    if (
        name == "printenv"
        or (name == "env" and all(arg.startswith("-") for arg in argv[1:]))
        or (name == "set" and len(argv) == 1)
    ):
        return _words(argv)
    return None


def _reads_sensitive_file(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or base(argv[0]) not in _FILE_READERS:
        return None
    found = next((arg for arg in positionals(argv[1:]) if is_sensitive_path(arg)), None)
    return _words(argv) if found else None


COMMAND_RULES: tuple[CommandRule, ...] = (
    CommandRule("rm -rf outside build output", "danger", _rm_recursive_force),
    CommandRule("git push --force/--mirror/+refspec", "danger", _force_push),
    CommandRule("download run by a shell or interpreter", "danger", _download_to_shell),
    CommandRule("DROP/TRUNCATE TABLE", "danger", _destructive_sql),
    CommandRule("database drop (dropdb, prisma migrate reset, rails db:drop)", "danger", _drops_database),
    CommandRule("mkfs / dd of=/dev/…", "danger", _wipes_disk),
    CommandRule("git push --force-with-lease", "warn", _lease_push),
    CommandRule("git reset --hard", "warn", _git_subcommand("reset", lambda args: "--hard" in args)),
    CommandRule(
        "git clean -f",
        "warn",
        _git_subcommand("clean", lambda args: "f" in short_flags(args) or "--force" in args),
    ),
    CommandRule("sudo/doas", "warn", _elevated),
    CommandRule("chmod 777", "warn", _world_writable),
    CommandRule("npm/pnpm/yarn publish", "warn", _publishes),
    CommandRule("prints the environment (env, printenv, set)", "warn", _prints_environment),
    CommandRule("reads a credentials file", "warn", _reads_sensitive_file, kind="sensitive_read"),
)
