"""Command rules about running code nobody reviewed: downloaded or decoded text given to a
shell, a fork bomb, packages from a URL; and about what a command shows (the environment,
a credentials file).

Each test looks at one simple command and the words its wrappers run, and returns the words
it matched, or None. Pure.
"""

from __future__ import annotations

import re

from postrun.review.argv import INTERPRETER, base, positionals, quoted, unwrapped
from postrun.review.path_rules import is_sensitive_path
from postrun.review.scripts import SHELLS, reads_stdin
from postrun.review.shell import Command

_SOURCING = frozenset({"eval", "source", "."})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "aria2c"})
_FILE_READERS = frozenset(
    {
        *("cat", "less", "more", "head", "tail", "bat", "nl", "xxd", "od", "hexdump", "strings", "base64"),
        *("grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "mawk", "sed", "cut"),
        *("sort", "uniq", "tac", "jq", "yq", "diff", "vim", "vi", "nano", "emacs", "code", "openssl", "gpg"),
    }
)
# Their first operand is a pattern or a program (``grep KEY .env``, ``sed -n 1p f``), not a file.
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "mawk", "sed", "jq", "yq"})
_COPIERS = frozenset({"cp", "mv", "scp", "rsync", "tar", "zip", "7z", "install"})  # their sources are read
# Folders that hold nothing but credentials: copied or archived whole, their keys go with them.
_CREDENTIAL_FOLDERS = re.compile(
    r"(?:^|/)(?:\.ssh|\.aws|\.gnupg|\.kube|\.docker|\.config/gh|\.config/gcloud|\.azure|\.password-store)/?$"
)
# Commands that print a credential without reading a file a rule can name.
_CREDENTIAL_PRINTERS: tuple[tuple[str, tuple[str, ...], frozenset[str]], ...] = (
    ("kubectl", ("config", "view"), frozenset({"--raw", "--flatten"})),
    ("gh", ("auth", "token"), frozenset()),
    ("aws", ("configure", "export-credentials"), frozenset()),
    ("gcloud", ("auth", "print-access-token"), frozenset()),
    ("gcloud", ("auth", "print-identity-token"), frozenset()),
    ("gcloud", ("auth", "application-default", "print-access-token"), frozenset()),
    ("az", ("account", "get-access-token"), frozenset()),
    ("heroku", ("auth:token",), frozenset()),
)
_PRINTER_NAMES = frozenset(program for program, _, _ in _CREDENTIAL_PRINTERS)
_PACKAGE_SOURCES = ("http://", "https://", "git+", "git://", "file://", "github:", "gitlab:", "bitbucket:")
_PIP_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host")


def _runs_code(argv: tuple[str, ...]) -> bool:
    name = base(argv[0]) if argv else ""
    return name in SHELLS or name in _SOURCING or bool(INTERPRETER.fullmatch(name))


def _program(command: Command) -> tuple[str, ...]:
    return unwrapped(command.argv)


def _downloads(commands: tuple[Command, ...]) -> Command | None:
    return next((c for c in commands if base(_program(c)[0] if _program(c) else "") in _DOWNLOADERS), None)


def download_to_shell(command: Command, argv: tuple[str, ...]) -> str | None:
    if not _runs_code(argv):
        return None
    download = _downloads(command.upstream) if reads_stdin(argv) else None
    if download is None and command.substituted:
        name = base(argv[0])
        executes = (
            name in SHELLS or name in _SOURCING or any(arg.startswith("<(") or arg in ("-c", "-e") for arg in argv[1:])
        )
        download = _downloads(command.substituted) if executes else None
    if download is None:
        return None
    return f"{quoted(download.argv)} -> {quoted(argv)}"


def _decodes(argv: tuple[str, ...]) -> bool:
    name = base(argv[0]) if argv else ""
    args = argv[1:]
    if name == "base64" or name == "base32":
        return any(arg in ("-d", "-D", "--decode") for arg in args)
    if name == "xxd":
        return "-r" in args or any(arg.startswith("-r") for arg in args)
    if name == "openssl":
        return "-d" in args
    return name in ("uudecode", "gunzip", "zcat", "bzcat", "xzcat", "rev") or (name == "gzip" and "-d" in args)


def decoded_to_shell(command: Command, argv: tuple[str, ...]) -> str | None:
    """``echo … | base64 -d | sh``: text nobody can read, run."""
    if not _runs_code(argv) or not reads_stdin(argv):
        return None
    decoder = next((c for c in command.upstream if _decodes(_program(c))), None)
    return None if decoder is None else f"{quoted(decoder.argv)} -> {quoted(argv)}"


def fork_bomb(command: Command, argv: tuple[str, ...]) -> str | None:
    """A function piping into itself inside its own body (``:(){ :|:& };:``): it never stops forking."""
    name = command.function
    if name and command.name == name and any(upstream.name == name for upstream in command.upstream):
        return f"{name}() {{ {name} | {name} }}"
    return None


def installs_from_url(command: Command, argv: tuple[str, ...]) -> str | None:
    """``pip install https://…``, ``pip install --index-url …``, ``npm install github:…``: code
    from outside the package index (or from another index)."""
    if not argv:
        return None
    name = base(argv[0])
    args = list(argv[1:])
    if INTERPRETER.fullmatch(name) and args[:2] == ["-m", "pip"]:
        name, args = "pip", args[2:]
    elif name == "uv" and args[:1] == ["pip"]:
        name, args = "pip", args[1:]
    operands = positionals(tuple(args))
    sources = operands[1:]
    if name in ("pip", "pip3", "pipx") and operands[:1] == ["install"]:
        other_index = any(arg.startswith(_PIP_INDEX_OPTIONS) for arg in args)
        return quoted(argv) if other_index or any(op.startswith(_PACKAGE_SOURCES) for op in sources) else None
    if name in ("npm", "pnpm", "yarn", "bun") and operands[:1] in (["install"], ["i"], ["add"]):
        from_url = any(op.startswith(_PACKAGE_SOURCES) or op.endswith((".tgz", ".tar.gz")) for op in sources)
        return quoted(argv) if from_url else None
    return None


def prints_environment(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = base(argv[0])
    if (
        name == "printenv"
        or (name == "env" and all(arg.startswith("-") for arg in argv[1:]))
        or (name == "set" and len(argv) == 1)
    ):
        return quoted(argv)
    return None


def files_read(command: Command, argv: tuple[str, ...]) -> list[str]:
    """The files a simple command reads: ``< file``, a file reader's operands, a copier's sources."""
    name = base(argv[0]) if argv else ""
    read: list[str] = list(command.reads)
    operands = positionals(argv[1:])
    if name in _FILE_READERS:
        read += operands[1:] if name in _PATTERN_FIRST else operands
    elif name in ("zip", "7z"):
        read += operands[1:] if name == "zip" else operands[2:]  # `zip out.zip SRC…`, `7z a out.7z SRC…`
    elif name in _COPIERS:
        read += operands[:-1] if name != "tar" else operands
    elif name == "dd":
        read += [arg[3:] for arg in argv[1:] if arg.startswith("if=")]
    return read


def reads_sensitive_file(command: Command, argv: tuple[str, ...]) -> str | None:
    """``cat .env``, ``grep KEY .env``, ``cp .env /tmp``, ``cmd < .env``, ``source .env``: a
    credentials file read."""
    read = files_read(command, argv)
    if argv and base(argv[0]) in ("source", "."):
        read += positionals(argv[1:])
    found = next((path for path in read if is_sensitive_path(path)), None)
    if found is None and argv and base(argv[0]) in _COPIERS:
        found = next((path for path in read if _CREDENTIAL_FOLDERS.search(path)), None)
    if found is None:
        return _prints_credentials(argv)
    return quoted(argv) + (f" < {found}" if found in command.reads and found not in argv else "")


def _prints_credentials(argv: tuple[str, ...]) -> str | None:
    """``kubectl config view --raw``, ``gh auth token``, ``gcloud auth print-access-token``: a
    credential printed where the agent (and its model) reads it."""
    name = base(argv[0]) if argv else ""
    if name not in _PRINTER_NAMES and not name.startswith("docker-credential-"):
        return None
    words = positionals(argv[1:])
    for program, verbs, needs in _CREDENTIAL_PRINTERS:
        if name == program and tuple(words[: len(verbs)]) == verbs and (not needs or needs & set(argv)):
            return quoted(argv)
    if name.startswith("docker-credential-") and words[:1] == ["get"]:
        return quoted(argv)
    return None
