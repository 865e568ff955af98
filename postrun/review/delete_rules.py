"""Command rules about destroying data: deleting, wiping, overwriting, erasing history.

Each test looks at one simple command (``postrun.review.shell``) and the words its wrappers
run (``postrun.review.argv``) and returns the words it matched, or None. Deleting build
output, caches and temp folders is routine; deleting anything else recursively is not.
"""

from __future__ import annotations

import re

from postrun.review.argv import base, positionals, quoted, short_flags
from postrun.review.interpreters import interpreter_code
from postrun.review.path_rules import TEMP_DIRS
from postrun.review.shell import Command

# Deleting these is routine: build output and caches a build or a tool recreates.
ROUTINE_OUTPUT = frozenset(
    {
        *("node_modules", "dist", "build", "_build", "out", ".venv", "venv", "target", "__pycache__", "coverage"),
        *(".coverage", "htmlcov", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".hypothesis"),
        *(".next", ".nuxt", ".svelte-kit", ".turbo", ".parcel-cache", ".angular", ".expo", ".gradle", ".eggs"),
        *(".dart_tool", ".cache", "storybook-static", "obj", ".terraform", "site", "public/build", ".docusaurus"),
        *(".nyc_output", "test-results", "playwright-report", "blob-report", "Pods", "DerivedData", "cdk.out"),
        *(".aws-sam", ".serverless", ".vercel", ".wrangler", ".eslintcache", ".pnpm-store", "tmp"),
    }
)
# Lockfiles an install writes again (``rm -rf node_modules package-lock.json && npm install``).
ROUTINE_FILES = frozenset({"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb"})
_TEMP_VARIABLES = ("$TMPDIR/", "${TMPDIR}/", "$TMP/", "$TEMP/", "${TMP}/", "${TMPDIR:-/tmp}/")
# A user's caches: what is below them a tool downloads again (``rm -rf ~/.cache/pip``).
_HOME_CACHES = tuple(
    f"{home}/{cache}/"
    for home in ("~", "$HOME", "${HOME}")
    for cache in (".cache", "Library/Caches", ".npm/_cacache", ".gradle/caches")
)
_FIND_TESTS = frozenset(
    {
        *("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-newer"),
        *("-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-empty", "-user", "-group", "-perm"),
    }
)
_DELETERS = frozenset({"rm", "shred", "unlink", "rmdir"})
_HARMLESS_DEVICES = re.compile(r"/dev/(?:null|zero|u?random|stdout|stderr|stdin|tty|fd/\d+|shm/.*)$")
_SYSTEM_PATH = re.compile(
    r"(?:/private)?/(?:etc|boot|bin|sbin|lib|lib32|lib64|System)(?:/|$)|/usr/(?!local/)|/var/lib/|/dev/|/proc/|/sys/"
)
_HISTORY_FILES = re.compile(r"(?:^|/)\.(?:bash|zsh|sh|python|node_repl|psql|mysql|sqlite)_?history$")
_HISTORY_VARIABLES = re.compile(r"HIST(?:FILE|SIZE|FILESIZE|CONTROL)?=(?:/dev/null|0|)$")
# Calls that delete a whole tree: Python's ``shutil.rmtree``, Perl's ``rmtree``/``remove_tree``,
# fs-extra's ``removeSync``, Ruby's ``FileUtils.rm_rf``/``rm_r``/``remove_dir``/``remove_entry``
# (Perl's and Ruby's also without parentheses); and Node's and Deno's ``rm``/``rmSync``/``rmdir``/
# ``rmdirSync``/``remove`` told ``recursive: true``. Found by name first; each is then read
# from where its name starts, within bounds, and only so many are read (``_CALLS_READ``), so
# a line of any length costs one pass and a bounded read per call.
_CALL = re.compile(
    r"\b(?:rmtree|remove_tree|removeSync|rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?|rm|rmSync|rmdir|rmdirSync|remove)\b"
)
_CALLS_READ = 256
_TREE_DELETE = re.compile(
    r"""(?x)
    (?:rmtree|remove_tree|removeSync|rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?)
      [ \t]{0,8}\([ \t]{0,8}(?P<called>[^,)\n;]{0,300}+)
  | (?:rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?)[ \t]{1,8}(?P<ruby>['"]?[\w/.~$'"-]{0,300}+)
  | (?:rmtree|remove_tree)[ \t]{1,8}(?P<perl>['"$][\w/.~$'"-]{0,300}+)
  | (?:rm|rmSync|rmdir|rmdirSync|remove)[ \t]{0,8}\([ \t]{0,8}(?P<recursive>[^,\n;]{0,300}+),
      [^;]{0,200}?\brecursive\s{0,8}:\s{0,8}true
    """
)
# A literal path, or one made of a literal (``pathlib.Path('build')``).
_LITERAL = re.compile(r"""\s*(?:(?:pathlib\.)?Path\(\s*)?(['"`])([^'"`$]*)\1\s*\)?\s*""")
# A temp folder the code made, by the name it holds it in (``d = tempfile.mkdtemp()``).
_MADE_TEMP = re.compile(r"\b([A-Za-z_]\w*)[ \t]{0,8}=[ \t]{0,8}(?:tempfile\.)?mkdtemp\(")


def routine(target: str) -> bool:
    """A path whose deletion loses nothing a build or a tool does not make again: build output
    or a cache inside the workspace (``target/debug``, ``.pytest_cache``), or a temp folder's."""
    path = target.rstrip("/")
    if path.endswith("/*"):
        path = path[:-2]
    if any(
        path.startswith(folder) and len(path) > len(folder) for folder in (*TEMP_DIRS, *_TEMP_VARIABLES, *_HOME_CACHES)
    ):
        return ".." not in path.split("/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or path.startswith(("/", "~", "$")) or ".." in parts:
        return False
    return parts[-1] in ROUTINE_FILES or any(part in ROUTINE_OUTPUT or part.endswith(".egg-info") for part in parts)


def rm_recursive_force(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or base(argv[0]) != "rm":
        return None
    args = argv[1:]
    letters = short_flags(args)
    recursive = "r" in letters or "R" in letters or "--recursive" in args
    force = "f" in letters or "--force" in args
    targets = [target for target in positionals(args) if target != "{}"]  # find -exec's: the find rule's
    if not targets and "xargs" in map(base, command.argv[: len(command.argv) - len(argv)]):  # `sudo xargs rm -rf`
        targets = ["(the paths xargs reads)"]
    if recursive and force and any(not routine(target) for target in targets):
        return quoted(argv)
    return None


def interpreter_deletes_tree(command: Command, argv: tuple[str, ...]) -> str | None:
    """Code given to an interpreter (``python -c``, ``node -e``, a here-document or ``echo`` to ``python3 -``)
    that deletes a tree, unless each tree it names is build output or a cache (a literal path
    ``routine`` allows) or a temp folder the code made: ``shutil.rmtree('dist')`` is routine,
    ``shutil.rmtree(sys.argv[1])`` not."""
    code = interpreter_code(command, argv)
    if any(_deletes_tree(text) for text in code.words):
        return quoted(argv)
    if code.fed and (call := _deletes_tree(code.fed)):
        return f"{quoted(argv)} <<… {call}"
    return None


def _deletes_tree(code: str) -> str | None:
    """The line of ``code`` whose call deletes a tree that is not routine to delete, None when none does."""
    temporary: frozenset[str] | None = None  # the names of temp folders the code made, once asked
    for index, name in enumerate(_CALL.finditer(code)):
        if index == _CALLS_READ:
            break
        found = _TREE_DELETE.match(code, name.start())
        if found is None:
            continue
        given = next(group for group in found.groups() if group is not None)
        literal = _LITERAL.fullmatch(given)
        if literal is None:
            temporary = frozenset(made[1] for made in _MADE_TEMP.finditer(code)) if temporary is None else temporary
            if given.strip() in temporary:
                continue
        if literal is None or not routine(literal[2]):
            end = code.find("\n", found.start())
            return code[code.rfind("\n", 0, found.start()) + 1 : end if end >= 0 else len(code)].strip()
    return None


def find_deletes(command: Command, argv: tuple[str, ...]) -> str | None:
    """``find`` deleting (``-delete``, ``-exec rm``) where it starts outside the workspace, or
    everything it finds (no test narrows it): ``find . -name '*.pyc' -delete`` is routine."""
    if not argv or base(argv[0]) != "find":
        return None
    args = argv[1:]
    deletes = "-delete" in args or any(
        word in ("-exec", "-execdir", "-ok", "-okdir") and index + 1 < len(args) and base(args[index + 1]) in _DELETERS
        for index, word in enumerate(args)
    )
    if not deletes:
        return None
    starts = []
    for word in args:
        if word.startswith("-") or word in ("(", "!", ")"):
            break
        starts.append(word)
    # A negated test (`! -name .`) narrows nothing: it matches all but what it names.
    negated = (("!",), ("-not",))
    narrowed = any(word in _FIND_TESTS and args[index - 1 : index] not in negated for index, word in enumerate(args))
    inside = all(routine(start) or _relative(start) or _temp_folder(start) for start in starts or ["."])
    return None if inside and narrowed else quoted(argv)


def _temp_folder(path: str) -> bool:
    """A temp folder itself (``/tmp``): what a narrowed ``find`` deletes below it is a temp file."""
    return path.rstrip("/") + "/" in (*TEMP_DIRS, *_TEMP_VARIABLES)


def _relative(path: str) -> bool:
    return not path.startswith(("/", "~", "$")) and ".." not in path.split("/")


def wipes_disk(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = base(argv[0])
    if name in ("mkfs", "mkswap", "wipefs", "blkdiscard") or name.startswith("mkfs."):
        return quoted(argv) if positionals(argv[1:]) else None
    if name == "sgdisk" and any(arg in ("-Z", "--zap-all", "-o", "--clear") for arg in argv[1:]):
        return quoted(argv)
    if name == "dd":
        for arg in argv[1:]:
            if arg.startswith("of=/dev/") and not _HARMLESS_DEVICES.match(arg[3:]):
                return quoted(argv)
    return None


def shreds(command: Command, argv: tuple[str, ...]) -> str | None:
    return quoted(argv) if argv and base(argv[0]) == "shred" and positionals(argv[1:]) else None


def truncates(command: Command, argv: tuple[str, ...]) -> str | None:
    """``truncate -s 0`` of a file that is not a log or a temp file."""
    if not argv or base(argv[0]) != "truncate":
        return None
    args = argv[1:]
    sizes = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-s", "--size")]
    sizes += [arg[2:] for arg in args if arg.startswith("-s") and len(arg) > 2]
    sizes += [arg.split("=", 1)[1] for arg in args if arg.startswith("--size=")]
    emptied = any(size.lstrip("=") in ("0", "0K", "0M", "0G") for size in sizes)
    targets = [arg for arg in positionals(args) if arg not in sizes]
    kept = all(target.endswith(".log") or routine(target) for target in targets)
    return quoted(argv) if emptied and targets and not kept else None


def overwrites_system_file(command: Command, argv: tuple[str, ...]) -> str | None:
    """``> /etc/passwd``, ``tee /etc/sudoers``, ``cp x /etc/shadow``, ``mv x /dev/null``, ``> /dev/sda``."""
    targets = list(command.writes)
    name = base(argv[0]) if argv else ""
    operands = positionals(argv[1:])
    if name == "tee" and not ({"-a", "--append"} & set(argv[1:])):
        targets += operands
    if name in ("cp", "mv", "install", "ln") and len(operands) >= 2:
        targets.append(operands[-1])
    found = next((path for path in targets if _system_path(path) or (name == "mv" and path == "/dev/null")), None)
    return None if found is None else quoted(argv) + (f" > {found}" if found in command.writes else "")


def appends_system_file(command: Command, argv: tuple[str, ...]) -> str | None:
    """``echo x >> /etc/hosts``, ``tee -a /etc/fstab``: a change to the system, not its loss."""
    targets = list(command.appends)
    if argv and base(argv[0]) == "tee" and {"-a", "--append"} & set(argv[1:]):
        targets += positionals(argv[1:])
    found = next((path for path in targets if _system_path(path)), None)
    return None if found is None else quoted(argv) + (f" >> {found}" if found in command.appends else "")


def _system_path(path: str) -> bool:
    return bool(_SYSTEM_PATH.match(path)) and not _HARMLESS_DEVICES.match(path)


def clears_history(command: Command, argv: tuple[str, ...]) -> str | None:
    """``history -c``, ``set +o history``, ``unset HISTFILE``, ``export HISTFILE=/dev/null``,
    and deleting or emptying a shell's history file: what was run is hidden."""
    if not argv and not command.writes:
        return None
    name = base(argv[0]) if argv else ""
    args = argv[1:]
    if name == "history" and "c" in short_flags(args):
        return quoted(argv)
    if name == "set" and "+o" in args and "history" in args:
        return quoted(argv)
    if name == "unset" and any(arg.startswith("HIST") for arg in args):
        return quoted(argv)
    if name in ("export", "declare", "typeset") and any(_HISTORY_VARIABLES.match(arg) for arg in args):
        return quoted(argv)
    touched = [*command.writes, *(positionals(args) if name in (*_DELETERS, "truncate", "ln", "cp") else [])]
    found = next((path for path in touched if _HISTORY_FILES.search(path)), None)
    return None if found is None else quoted(argv) + (f" > {found}" if found in command.writes else "")


# What a recursive change of owner or mode, or a mirror deleting what is not in its source,
# must never reach: the root, the home folder, the system's folders.
_EVERYTHING = frozenset({"/", "/*", "~", "~/", "~/*", "$HOME", "$HOME/", "${HOME}", "${HOME}/", "$HOME/*"})


def _everything(path: str) -> bool:
    return path in _EVERYTHING or _system_path(path.rstrip("/*") + "/")


def changes_everything(command: Command, argv: tuple[str, ...]) -> str | None:
    """``chmod -R 777 /``, ``chown -R nobody /``, ``chgrp -R x ~``: every file's owner or mode, changed."""
    if not argv or base(argv[0]) not in ("chmod", "chown", "chgrp"):
        return None
    args = argv[1:]
    if "R" not in short_flags(args) and "--recursive" not in args:
        return None
    return quoted(argv) if any(_everything(path) for path in positionals(args)[1:]) else None


def mirrors_over_everything(command: Command, argv: tuple[str, ...]) -> str | None:
    """``rsync -a --delete empty/ ~/``: whatever the source lacks is deleted from the root or home."""
    if not argv or base(argv[0]) != "rsync" or not any(arg.startswith("--delete") for arg in argv[1:]):
        return None
    words = positionals(argv[1:])
    return quoted(argv) if len(words) >= 2 and _everything(words[-1]) else None


def removes_crontab(command: Command, argv: tuple[str, ...]) -> str | None:
    return quoted(argv) if argv and base(argv[0]) == "crontab" and "r" in short_flags(argv[1:]) else None


def kills_everything(command: Command, argv: tuple[str, ...]) -> str | None:
    """``kill -9 -1``: every process the user may signal."""
    if argv and base(argv[0]) == "kill" and "-1" in argv[1:] and argv[1:].index("-1") > 0:
        return quoted(argv)
    return None
