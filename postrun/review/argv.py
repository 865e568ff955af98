"""What a simple command's words say: the program a wrapper runs, and its options and arguments.

The command rules read ``argv`` through these (``sudo -u x rm -rf y`` deletes like
``rm -rf y``; ``git -C repo push -f`` pushes like ``git push -f``). Pure: words in, words out.
"""

from __future__ import annotations

import re

QUOTED_CHARS = 120  # the most of a matched part a flag's reason quotes
# Programs that run code given as a word (``python -c``, ``node -e``) or on their input.
INTERPRETER = re.compile(r"(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php)")

# Programs that run the rest of their words as a command; their own options come first.
_WRAPPERS = frozenset(
    {
        *("sudo", "doas", "pkexec", "run0", "env", "nohup", "time", "nice", "timeout", "command", "exec"),
        *("xargs", "stdbuf", "ionice", "chronic", "setsid", "unbuffer", "busybox", "toybox", "caffeinate"),
        *("flock", "chroot", "strace", "ltrace", "proxychains", "proxychains4", "torsocks", "firejail"),
    }
)
_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "doas": {"-u", "-C"},
    "pkexec": {"--user"},
    "run0": {"-u", "--user", "-D", "--chdir"},
    "env": {"-u", "-C", "-S"},
    "nice": {"-n"},
    "exec": {"-a"},
    "timeout": {"-s", "-k"},
    "xargs": {"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"},
    "ionice": {"-c", "-n", "-p"},
    "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
    "strace": {"-o", "-e", "-p", "-s", "-u", "-a", "-P", "-I", "-b", "-X"},
    "ltrace": {"-o", "-e", "-p", "-s", "-u", "-a", "-n"},
    "proxychains": {"-f"},
    "proxychains4": {"-f"},
}
_EXEC_VALUE_OPTIONS = frozenset({"-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys"})
# Wrappers whose first operand is theirs, not the command's (`flock LOCKFILE cmd`, `chroot DIR cmd`).
_OPERAND_FIRST = frozenset({"flock", "chroot"})
_TIMEOUT_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)


def short_flags(args: tuple[str, ...]) -> str:
    """Every single-letter option of ``args`` run together (``-rf -v`` -> ``rfv``), up to ``--``."""
    letters = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--"):
            letters.append(arg[1:])
    return "".join(letters)


def unwrapped(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The command a wrapper runs: ``sudo -u x env A=1 rm -rf y`` -> ``rm -rf y``; in a container
    too (``docker exec db psql …``, ``kubectl exec pod -- rm …``)."""
    argv = _in_container(argv)
    while argv and base(argv[0]) in _WRAPPERS:
        wrapper = base(argv[0])
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
            elif (wrapper == "timeout" and _TIMEOUT_DURATION.fullmatch(word)) or wrapper in _OPERAND_FIRST:
                index += 1
                break
            else:
                break
        if index >= len(argv):
            return argv if wrapper == "env" else ()  # a bare `env` prints the environment
        argv = _in_container(argv[index:])
    return argv


def _in_container(argv: tuple[str, ...]) -> tuple[str, ...]:
    if len(argv) < 3 or argv[1] != "exec":
        return argv
    tool = base(argv[0])
    if tool in ("kubectl", "oc"):
        return argv[argv.index("--") + 1 :] if "--" in argv else argv
    if tool not in ("docker", "podman"):
        return argv
    index = 2
    while index < len(argv) and argv[index].startswith("-"):
        index += 2 if argv[index] in _EXEC_VALUE_OPTIONS else 1
    return argv[index + 1 :] if index + 1 < len(argv) else argv


def base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def quoted(argv: tuple[str, ...]) -> str:
    """Words as a rule's match quotes them (``flags`` masks their secrets and cuts the reason)."""
    return " ".join(argv)


def positionals(args: tuple[str, ...]) -> list[str]:
    if "--" in args:
        before, after = args[: args.index("--")], args[args.index("--") + 1 :]
    else:
        before, after = args, ()
    return [arg for arg in before if not arg.startswith("-")] + list(after)


def operands(args: tuple[str, ...], value_options: frozenset[str]) -> list[str]:
    """``positionals`` of a program whose options in ``value_options`` take the next word as
    their value (``kubectl -n prod delete ns x`` -> ``delete ns x``, not ``prod delete ns x``)."""
    found: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return found + list(args[index + 1 :])
        if word in value_options:
            index += 2
            continue
        if not word.startswith("-"):
            found.append(word)
        index += 1
    return found


def git_command(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """``git [global options] SUBCOMMAND ARGS`` -> (subcommand, args)."""
    if not argv or base(argv[0]) != "git":
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
