"""Every filesystem location Postrun uses, computed in one place.

Nothing else in Postrun calls ``Path.home()``, reads HOME or XDG variables, or asks
platformdirs: a command loads its settings once (``postrun.settings.load_settings``) and builds
one :class:`Paths` from their values (``postrun.settings.paths_for``) and the same injected
environment.

platformdirs reads HOME and ``XDG_*`` from the process environment itself; that is accepted,
and it is why its calls stay here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from postrun.errors import ConfigError, PostrunError

APP_NAME = "postrun"
CONFIG_VARIABLE = "POSTRUN_CONFIG"

# Cline's own resolution of its sessions root, first match wins:
# the variable, and the folders below its value where the sessions live.
_CLINE_SESSIONS_CHAIN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("CLINE_SESSION_DATA_DIR", ()),
    ("CLINE_DATA_DIR", ("sessions",)),
    ("CLINE_DIR", ("data", "sessions")),
)
_CLINE_HOME_SESSIONS = (".cline", "data", "sessions")

_PRIVATE_MODE = 0o700

# Why a relative path cannot be used: what it was relative to is gone.
RELATIVE_GONE = "a relative path, and the working directory was removed"


def env_value(environ: Mapping[str, str], name: str) -> str | None:
    """The variable's value without surrounding blanks; None when unset, empty or blank."""
    value = environ.get(name, "").strip()
    return value or None


def home_dir(environ: Mapping[str, str]) -> Path:
    """The user's home: ``HOME`` from ``environ``, else the account database.

    A literal ``~`` is not a home (Cline ignores it too); a relative one is a configuration
    error (every default path would move with the working directory).
    """
    home = env_value(environ, "HOME")
    if home is not None and home != "~":
        if not Path(home).is_absolute():
            raise ConfigError("HOME", f"must be an absolute path (got {home!r})")
        return Path(home)
    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def working_dir() -> Path | None:
    """The working directory relative paths resolve against; None when it was removed since the
    process started in it (a capture started in a folder deleted later, then sent SIGHUP).

    Only a relative path needs it (``expand_path`` then refuses that path): every other command
    runs as it would anywhere, instead of stopping at ``getcwd``'s error.
    """
    try:
        return Path.cwd()
    except FileNotFoundError:
        return None


def reachable(path: Path) -> bool:
    """Whether ``path`` can be looked up: absolute, or relative to a working directory still there."""
    return path.is_absolute() or working_dir() is not None


def expand_path(raw: str | Path, *, home: Path, base: Path | None) -> Path:
    """``raw`` with a leading ``~`` expanded against ``home`` and made absolute against ``base``.

    ``~user/...`` is looked up in the account database (HOME says nothing about other users).
    Symlinks and ``..`` are kept as written. ``base`` None is a removed working directory: a
    relative path is then a ``ValueError`` (it means nothing any more), as is ``~user`` of an
    unknown user.
    """
    text = os.fspath(raw)
    if text == "~" or text.startswith("~/"):
        path = home / text[2:]
    elif text.startswith("~"):
        try:
            path = Path(text).expanduser()
        except RuntimeError:  # no such account: a mistyped name, not Postrun's internal error
            user = text[1:].partition("/")[0]
            raise ValueError(f"no user {user!r} to expand '~{user}'") from None
    else:
        path = Path(text)
    if base is None:
        if not path.is_absolute():
            raise ValueError(RELATIVE_GONE)
        return path
    return base / path  # joining an absolute path keeps it unchanged


def expand_named(raw: str | Path, name: str, *, home: Path, base: Path | None) -> Path:
    """``expand_path`` of a value ``name`` gave (a variable, ``--config``): its error names it."""
    try:
        return expand_path(raw, home=home, base=base)
    except ValueError as exc:
        raise ConfigError(name, f"{exc} (got {os.fspath(raw)!r})") from None


def cline_sessions_root(environ: Mapping[str, str], *, base: Path | None) -> tuple[Path, str | None]:
    """Where Cline writes its sessions, and the variable that decided it (None: the HOME default).

    Follows Cline's chain; blank variables count as unset, relative values resolve against
    ``base`` (normally the working directory).
    """
    home = home_dir(environ)
    for name, below in _CLINE_SESSIONS_CHAIN:
        value = env_value(environ, name)
        if value is not None:
            return expand_named(value, name, home=home, base=base).joinpath(*below), name
    return cline_home_sessions(environ), None


def cline_home_sessions(environ: Mapping[str, str]) -> Path:
    """``~/.cline/data/sessions``: where a bare session id is looked up, whatever CLINE_* variables say."""
    return home_dir(environ).joinpath(*_CLINE_HOME_SESSIONS)


def default_db_path() -> Path:
    return platformdirs.user_data_path(APP_NAME) / "postrun.db"


def default_config_file() -> Path:
    return platformdirs.user_config_path(APP_NAME) / "config.toml"


def config_file_location(
    explicit: Path | None, environ: Mapping[str, str], *, base: Path | None
) -> tuple[Path, str | None]:
    """The configuration file to read and what named it: ``--config``, ``POSTRUN_CONFIG`` or None.

    None means the default location, which may be missing; a named file must exist.
    """
    home = home_dir(environ)
    if explicit is not None:
        return expand_named(explicit, "--config", home=home, base=base), "--config"
    named = env_value(environ, CONFIG_VARIABLE)
    if named is not None:
        return expand_named(named, CONFIG_VARIABLE, home=home, base=base), CONFIG_VARIABLE
    return default_config_file(), None


@dataclass(frozen=True)
class Paths:
    """The locations one command works with, built once from its store, sessions root and environment."""

    home: Path
    db: Path
    data_dir: Path  # the store's folder
    capture_lock: Path  # ``<db>.capture.lock``: one capture per store
    mirror_lock: Path  # ``<db>.mirror.lock``: one push of the store to its mirror at a time
    cline_dir: Path  # the sessions root the capture watches
    cline_default_sessions: Path  # where ``postrun ingest`` looks up a bare id (never POSTRUN_CLINE_DIR)
    config_file: Path
    log_dir: Path
    capture_log: Path  # the log of ``postrun capture --daemon``
    systemd_user_dir: Path
    launch_agents_dir: Path
    web_state: Path  # ``postrun serve``'s port and secret, for ``postrun open`` (0600)

    @classmethod
    def build(cls, environ: Mapping[str, str], *, db: Path, cline_dir: Path, config_file: Path | None = None) -> Paths:
        """Paths for the store ``db`` and the sessions root ``cline_dir``; ``config_file`` is the
        file the settings were read from, found again from ``environ`` when not given."""
        home = home_dir(environ)
        if config_file is None:
            config_file, _ = config_file_location(None, environ, base=working_dir())
        log_dir = platformdirs.user_log_path(APP_NAME)
        return cls(
            home=home,
            db=db,
            data_dir=db.parent,
            capture_lock=db.with_name(db.name + ".capture.lock"),
            mirror_lock=db.with_name(db.name + ".mirror.lock"),
            cline_dir=cline_dir,
            cline_default_sessions=cline_home_sessions(environ),
            config_file=config_file,
            log_dir=log_dir,
            capture_log=log_dir / "capture.log",
            systemd_user_dir=_xdg_config_home(environ, home) / "systemd" / "user",
            launch_agents_dir=home / "Library" / "LaunchAgents",
            web_state=platformdirs.user_state_path(APP_NAME) / "serve.json",
        )

    def is_store_file(self, path: Path) -> bool:
        """Whether ``path`` (through symlinks and hard links) is the store or one of the files
        SQLite and Postrun keep beside it: writing an export over one would destroy the store."""
        own = [self.db, *(self.db.with_name(self.db.name + s) for s in _STORE_SUFFIXES)]
        real = os.path.realpath(path)
        for file in own:
            if os.path.realpath(file) == real:
                return True
            with contextlib.suppress(OSError):
                if path.samefile(file):
                    return True
        return False


# The files beside the store: SQLite's (WAL, shared memory, rollback journal) and Postrun's locks.
_STORE_SUFFIXES = ("-wal", "-shm", "-journal", ".capture.lock", ".mirror.lock")


def _xdg_config_home(environ: Mapping[str, str], home: Path) -> Path:
    # The XDG spec says a relative value is invalid and must be ignored.
    value = env_value(environ, "XDG_CONFIG_HOME")
    if value is not None and Path(value).is_absolute():
        return Path(value)
    return home / ".config"


def ensure_private_dir(path: Path) -> None:
    """Make sure ``path`` is a directory; create the missing ones with mode 0700.

    Folders Postrun creates are 0700 whatever the umask (as the XDG spec asks). Existing
    folders are left alone: a store configured in ``/tmp`` or a shared folder is not
    Postrun's to chmod. Raises ``OSError`` when it cannot (the caller knows what the
    folder was for and words the error).
    """
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=_PRIVATE_MODE)
        except FileExistsError:
            continue  # created meanwhile by someone else: not ours to chmod, unless it is the leaf
        folder.chmod(_PRIVATE_MODE)  # mkdir's mode is filtered by the umask
    if not stat.S_ISDIR(path.stat().st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))


def write_private_file(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` atomically, readable by the user only.

    What ``path`` names is kept: a symlink's target is the file written, and a device or a FIFO
    (``-o /dev/stdout``, a named pipe) is written into, never replaced by a file of ours.
    """
    path = path.absolute()
    with contextlib.suppress(OSError):  # missing, or unreachable: the temporary file says why
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():
            _write_into(path, content)
            return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise PostrunError(str(path), f"cannot write ({exc.strerror or exc})") from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        Path(temporary).replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise PostrunError(str(path), f"cannot write ({exc.strerror or exc})") from None


def _write_into(path: Path, content: bytes) -> None:
    """``content`` written into what ``path`` already is (a device, a FIFO), as a shell's ``>`` does."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise PostrunError(str(path), f"cannot write ({exc.strerror or exc})") from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
    except OSError as exc:
        raise PostrunError(str(path), f"cannot write ({exc.strerror or exc})") from None
