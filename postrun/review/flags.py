"""Risk flags of one step: every rule in one table, each a pure test over the step.

A flag is a v1.2 ``Flag`` dict (``kind``, ``severity``, ``reason``); the reason quotes
the rule and the part that matched (a secret only masked). Commands are split the way
a shell splits them (``postrun.review.shell``), so ``echo "rm -rf /"`` is not a
deletion while ``bash -c "rm -rf /"`` is.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from postrun.review import secrets
from postrun.review.shell import Command, split_commands
from postrun.text import one_line

# Bump when a rule changes; with the secret rules' versions it names the rules a stored
# step was flagged under (stored sessions are re-flagged when it differs).
_FLAG_RULES = "1"
RULES_VERSION = f"flags-{_FLAG_RULES}+secrets-{secrets.RULES_VERSION}+detect-secrets-{secrets.DETECT_SECRETS_VERSION}"

Severity = Literal["info", "warn", "danger"]
FLAG_KINDS = ("dangerous_command", "secret_in_output", "outside_workspace", "sensitive_read", "rejected", "failed")
Flag = dict[str, str]
_QUOTED_CHARS = 120

# Deleting these is routine: build output and caches a build recreates.
ROUTINE_OUTPUT = frozenset({"node_modules", "dist", "build", ".venv", "target", "__pycache__"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})
_SOURCING = frozenset({"eval", "source", "."})
_INTERPRETER = re.compile(r"(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php)")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "aria2c"})
# Programs that run the rest of their words as a command; their own options come first.
_WRAPPERS = frozenset(
    {
        "sudo",
        "doas",
        "env",
        "nohup",
        "time",
        "nice",
        "timeout",
        "command",
        "exec",
        "xargs",
        "stdbuf",
        "ionice",
        "chronic",
    }
)
_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "doas": {"-u", "-C"},
    "env": {"-u", "-C", "-S"},
    "nice": {"-n"},
    "timeout": {"-s", "-k"},
    "xargs": {"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"},
    "ionice": {"-c", "-n", "-p"},
}
_TIMEOUT_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)
_SEARCH_TOOLS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "git"})
_SQL_DESTRUCTIVE = re.compile(r"(?i)\b(?:drop\s+(?:table|database|schema)|truncate\s+table)\b")
_HARMLESS_DEVICES = re.compile(r"/dev/(?:null|zero|stdout|stderr|tty|fd/\d+)$")
_FILE_READERS = frozenset(
    {"cat", "less", "more", "head", "tail", "bat", "nl", "xxd", "strings", "base64", "source", "."}
)
_TEMP_DIRS = ("/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/", "/private/var/folders/", "/dev/shm/")

# Files that hold credentials (matched on the path's last components).
_SENSITIVE_PATH = re.compile(
    r"""(?x)(?:^|/)(?:
        \.env(?!\.(?:example|sample|template|dist|defaults)$)(?:\.[^/]+)? | \.envrc
      | \.ssh/(?!known_hosts$|config$|[^/]*\.pub$)[^/]+ | id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?
      | [^/]+\.(?:pem|key|p12|pfx) | \.npmrc | \.pypirc | \.netrc | _netrc | \.git-credentials
      | \.aws/(?:credentials|config) | \.config/gcloud/[^/]+ | \.azure/[^/]+ | \.kube/config | kubeconfig[^/]*
      | \.docker/config\.json | [^/]+\.tfstate(?:\.backup)? | \.terraformrc | terraform\.tfvars
    )$"""
)


@dataclass(frozen=True, slots=True)
class CommandRule:
    """A test over one simple command; ``test`` returns the words it matched, or None."""

    name: str  # the rule as a reason quotes it
    severity: Severity
    test: Callable[[Command, tuple[str, ...]], str | None]
    kind: str = "dangerous_command"


def _words(argv: tuple[str, ...]) -> str:
    return one_line(" ".join(argv), _QUOTED_CHARS)


def _short_flags(args: tuple[str, ...]) -> str:
    """Every single-letter option of ``args`` run together (``-rf -v`` -> ``rfv``), up to ``--``."""
    letters = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            letters.append(arg[1:])
    return "".join(letters)


def unwrapped(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The command a wrapper runs: ``sudo -u x env A=1 rm -rf y`` -> ``rm -rf y``."""
    while argv and _base(argv[0]) in _WRAPPERS:
        wrapper = _base(argv[0])
        takes_value = _WRAPPER_VALUE_OPTIONS.get(wrapper, set())
        index = 1
        while index < len(argv):
            word = argv[index]
            if word == "--":
                index += 1
                break
            if word in takes_value:
                index += 2
            elif word.startswith("-") or (wrapper == "env" and "=" in word):
                index += 1
            elif wrapper == "timeout" and _TIMEOUT_DURATION.fullmatch(word):
                index += 1
                break
            else:
                break
        if index >= len(argv):
            return argv if wrapper == "env" else ()  # a bare `env` prints the environment
        argv = argv[index:]
    return argv


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _rm_recursive_force(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or _base(argv[0]) != "rm":
        return None
    args = argv[1:]
    letters = _short_flags(args)
    recursive = "r" in letters or "R" in letters or "--recursive" in args
    force = "f" in letters or "--force" in args
    targets = _positionals(args)
    if not targets and command.name == "xargs":
        targets = ["(the paths xargs reads)"]
    if recursive and force and any(not _routine(target) for target in targets):
        return _words(argv)
    return None


def _positionals(args: tuple[str, ...]) -> list[str]:
    if "--" in args:
        before, after = args[: args.index("--")], args[args.index("--") + 1 :]
    else:
        before, after = args, ()
    return [arg for arg in before if not arg.startswith("-")] + list(after)


def _routine(target: str) -> bool:
    path = target.rstrip("/")
    if path.endswith("/*"):
        path = path[:-2]
    return _base(path) in ROUTINE_OUTPUT


def _git(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """``git [global options] SUBCOMMAND ARGS`` -> (subcommand, args)."""
    if not argv or _base(argv[0]) != "git":
        return None
    index = 1
    while index < len(argv):
        word = argv[index]
        if word in _GIT_VALUE_OPTIONS:
            index += 2
        elif word.startswith("-"):
            index += 1
        else:
            return word, argv[index + 1 :]
    return None


def _git_push(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    git = _git(argv)
    return git[1] if git is not None and git[0] == "push" else None


def _force_push(command: Command, argv: tuple[str, ...]) -> str | None:
    args = _git_push(argv)
    if args is None:
        return None
    forced = "--force" in args or "--mirror" in args or "f" in _short_flags(args)
    if forced or any(arg.startswith("+") for arg in _positionals(args)):
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
        git = _git(argv)
        return _words(argv) if git is not None and git[0] == name and check(git[1]) else None

    return test


def _runs_code(argv: tuple[str, ...]) -> bool:
    name = _base(argv[0]) if argv else ""
    return name in _SHELLS or name in _SOURCING or bool(_INTERPRETER.fullmatch(name))


def _reads_stdin(argv: tuple[str, ...]) -> bool:
    """An interpreter with no script of its own (``sh``, ``sh -s``, ``python3 -``) runs its input."""
    args = argv[1:]
    if any(arg in ("-c", "-m", "-e", "-p", "--eval", "--print") for arg in args):
        return False
    positionals = [arg for arg in args if not arg.startswith("-") or arg == "-"]
    return not positionals or positionals[0] == "-"


def _downloads(commands: tuple[Command, ...]) -> Command | None:
    return next((c for c in commands if _base(unwrapped(c.argv)[0] if unwrapped(c.argv) else "") in _DOWNLOADERS), None)


def _download_to_shell(command: Command, argv: tuple[str, ...]) -> str | None:
    if not _runs_code(argv):
        return None
    download = _downloads(command.upstream) if _reads_stdin(argv) else None
    if download is None and command.substituted:
        name = _base(argv[0])
        executes = (
            name in _SHELLS or name in _SOURCING or any(arg.startswith("<(") or arg in ("-c", "-e") for arg in argv[1:])
        )
        download = _downloads(command.substituted) if executes else None
    if download is None:
        return None
    return f"{_words(download.argv)} -> {_words(argv)}"


def _destructive_sql(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or _base(argv[0]) in _SEARCH_TOOLS:
        return None
    match = _sql_statement(" ".join(argv)) or _sql_statement(command.stdin_text)
    return one_line(match.group(0), _QUOTED_CHARS) if match else None


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
    name = _base(argv[0])
    words = list(argv)
    if name == "dropdb":
        return _words(argv)
    if "prisma" in words and words[words.index("prisma") + 1 : words.index("prisma") + 3] == ["migrate", "reset"]:
        return _words(argv)
    drops = any(word.startswith("db:drop") for word in words)
    if drops and any(_base(word) in ("rails", "rake") for word in words):
        return _words(argv)
    return None


def _wipes_disk(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = _base(argv[0])
    if name == "mkfs" or name.startswith("mkfs."):
        return _words(argv)
    if name == "dd":
        for arg in argv[1:]:
            if arg.startswith("of=/dev/") and not _HARMLESS_DEVICES.match(arg[3:]):
                return _words(argv)
    return None


def _elevated(command: Command, argv: tuple[str, ...]) -> str | None:
    raw = command.argv
    return _words(raw) if raw and _base(raw[0]) in ("sudo", "doas") else None


def _world_writable(command: Command, argv: tuple[str, ...]) -> str | None:
    if argv and _base(argv[0]) == "chmod" and any(arg in ("777", "0777", "a+rwx", "ugo+rwx") for arg in argv[1:]):
        return _words(argv)
    return None


def _publishes(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or _base(argv[0]) not in ("npm", "pnpm", "yarn") or "--dry-run" in argv:
        return None
    positionals = _positionals(argv[1:])
    if positionals[:1] == ["publish"] or positionals[:2] == ["npm", "publish"]:
        return _words(argv)
    return None


def _prints_environment(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = _base(argv[0])
    if (
        name == "printenv"
        or (name == "env" and all(arg.startswith("-") for arg in argv[1:]))
        or (name == "set" and len(argv) == 1)
    ):
        return _words(argv)
    return None


def _reads_sensitive_file(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or _base(argv[0]) not in _FILE_READERS:
        return None
    found = next((arg for arg in _positionals(argv[1:]) if is_sensitive_path(arg)), None)
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
        _git_subcommand("clean", lambda args: "f" in _short_flags(args) or "--force" in args),
    ),
    CommandRule("sudo/doas", "warn", _elevated),
    CommandRule("chmod 777", "warn", _world_writable),
    CommandRule("npm/pnpm/yarn publish", "warn", _publishes),
    CommandRule("prints the environment (env, printenv, set)", "warn", _prints_environment),
    CommandRule("reads a credentials file", "warn", _reads_sensitive_file, kind="sensitive_read"),
)


def is_sensitive_path(path: str) -> bool:
    return bool(_SENSITIVE_PATH.search(path.replace("\\", "/")))


def outside_workspace(path: str, workspace_root: str) -> bool:
    """An absolute (or ``~``) path outside the workspace root and not in a temp folder."""
    if not workspace_root or not path:
        return False
    root = posixpath.normpath(workspace_root)
    if path.startswith("~"):
        return not root.startswith("~")
    full = posixpath.normpath(posixpath.join(root, path))
    if full == root or full.startswith(root.rstrip("/") + "/"):
        return False
    return not (full + "/").startswith(_TEMP_DIRS)


def step_flags(step: Mapping[str, Any], workspace_root: str, blob: bytes | None = None) -> list[Flag]:
    """Every flag of one v1.2 step (its own ``flags`` are ignored), in rule order; ``blob`` is
    the step's JSON when the caller has it (a cheaper first look for secrets)."""
    found: list[Flag] = []
    payload = step["payload"]
    kind = step["type"]
    if kind == "command" and isinstance(payload.get("command"), str):
        found += _command_flags(payload["command"])
    if kind in ("read", "edit"):
        path = payload["path"]
        if is_sensitive_path(path):
            verb = "reads" if kind == "read" else "edits"
            found.append(_flag("sensitive_read", "warn", f"{verb} a credentials file: {one_line(path, _QUOTED_CHARS)}"))
        if kind == "edit" and outside_workspace(path, workspace_root):
            found.append(
                _flag(
                    "outside_workspace",
                    "warn",
                    f"edit outside the workspace {workspace_root}: {one_line(path, _QUOTED_CHARS)}",
                )
            )
    found += _secret_flags(step, blob)
    if step["decision"] == "rejected":
        found.append(_flag("rejected", "warn", "rejected by the user"))
    if step["outcome"] == "failed":
        found.append(_flag("failed", "info", _failure(step)))
    return _unique(found)


def _command_flags(line: str) -> list[Flag]:
    found = _line_flags(line) if len(line) <= _CACHED_LINE_CHARS else _flags_of_line(line)
    return [_flag(kind, severity, reason) for kind, severity, reason in found]


# Agents run the same commands again and again (tests, builds, git status); parsing and
# testing one costs about 15 µs. Longer lines (heredocs, scripts) rarely repeat.
_CACHED_LINE_CHARS = 1024


@functools.lru_cache(maxsize=1024)
def _line_flags(line: str) -> tuple[tuple[str, Severity, str], ...]:
    return _flags_of_line(line)


def _flags_of_line(line: str) -> tuple[tuple[str, Severity, str], ...]:
    found = []
    for command in split_commands(line):
        argv = unwrapped(command.argv)
        for rule in COMMAND_RULES:
            matched = rule.test(command, argv)
            if matched is not None:
                found.append((rule.kind, rule.severity, f"{rule.name}: {matched}"))
    return tuple(found)


def _failure(step: Mapping[str, Any]) -> str:
    if "error" in step:
        return f"{step['error']['type']}: {one_line(step['error']['message'], _QUOTED_CHARS)}"
    exit_code = step["payload"].get("exit_code")
    return f"exit {exit_code}" if exit_code is not None else "the step failed"


def step_texts(step: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, text) for every string a step holds: its payload (raw included) and error."""
    for key, value in step["payload"].items():  # the payload's own fields without a generator each
        if isinstance(value, str):
            yield str(key), value
        elif isinstance(value, dict | list):
            yield from _strings(value, str(key))
    if "error" in step:
        yield "error", step["error"]["message"]


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")


def _secret_flags(step: Mapping[str, Any], blob: bytes | None) -> list[Flag]:
    # One quick look at all of them first: most steps hold no keyword of any rule.
    if blob is not None and not secrets.json_may_hold_secrets(blob):
        return []
    texts = list(step_texts(step))
    if not secrets.may_hold_secrets("\n".join(text for _, text in texts)):
        return []
    found = []
    for where, text in texts:
        by_rule: dict[secrets.SecretRule, list[secrets.Secret]] = {}
        for secret in secrets.find_secrets(text):
            by_rule.setdefault(secret.rule, []).append(secret)
        for rule, matches in by_rule.items():
            more = f" and {len(matches) - 1} more" if len(matches) > 1 else ""
            reason = f"{rule.label} ({rule.source}) in {where}: {matches[0].masked}{more}"
            found.append(_flag("secret_in_output", "danger", reason))
    return found


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
