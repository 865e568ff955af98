"""Run ``postrun capture`` as a per-user service: the systemd user unit and the launchd agent.

The files are rendered here, for the running Postrun: the service starts the very executable
that installed it (its console script, else ``<python> -m postrun``). Paths are absolute and
symlinks are kept on purpose: pipx's ``~/.local/bin/postrun`` and Homebrew's
``/opt/homebrew/bin/postrun`` survive upgrades, the version folders they point to do not.
``systemd/postrun.service`` and ``launchd/dev.postrun.capture.plist`` in the repository are
renderings of the same templates (a test keeps them equal).

Every external command (``systemctl``, ``launchctl``) goes through one injectable ``Runner``.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from postrun.errors import PostrunError, UsageError
from postrun.paths import Paths, ensure_private_dir, write_private_file
from postrun.settings import SETTING_KEYS, env_variable

Platform = Literal["linux", "macos"]
PLATFORMS: tuple[Platform, ...] = ("linux", "macos")

UNIT_NAME = "postrun.service"
SERVICE_NAME = "postrun"  # what the user types after `systemctl --user`
LABEL = "dev.postrun.capture"
HOMEBREW_LABEL = "homebrew.mxcl.postrun"  # the agent `brew services start postrun` writes
# Where packages and administrators put user units (systemd.unit(5)); ~/.config wins over them.
SYSTEM_UNIT_DIRS = (Path("/etc/systemd/user"), Path("/usr/local/lib/systemd/user"), Path("/usr/lib/systemd/user"))

RESTART_SECONDS = 5
WATCHDOG_SECONDS = 60
STOP_TIMEOUT_SECONDS = 20
# launchd cannot exclude exit codes: a second capture (75) or a bad config (78) is respawned,
# at most once per this many seconds (a capture that ran longer is respawned at once).
THROTTLE_SECONDS = 60
NICE = 10
_FILE_MODE = 0o644
# systemctl may wait for READY=1 (Type=notify), which can take a while on a first start.
_COMMAND_TIMEOUT_SECONDS = 360
_NO_MANAGER_MARKERS = ("Failed to connect to bus", "Failed to connect to user scope bus")
NO_USER_MANAGER = "no user manager"

_UNIT_TEMPLATE = """\
# Postrun capture as a per-user service: `systemctl --user enable --now postrun`.
# Configure it in ~/.config/postrun/config.toml: POSTRUN_* variables set in shell rc
# files do not reach it (or add Environment= lines with `systemctl --user edit postrun`).
# Logs: `journalctl --user -u postrun`. Stricter sandboxing: the hardening.conf drop-in.

[Unit]
Description=Postrun capture: record Cline sessions into the local store
# A capture that keeps failing gives up after 5 starts within 5 minutes.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=notify
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec={restart}
# 75: another capture holds the store; 78: a configuration error. A restart fixes neither.
RestartPreventExitStatus=75 78
WatchdogSec={watchdog}
# READY=1 comes once the store is open (after an upgrade, migrated) and watched.
TimeoutStartSec=120
TimeoutStopSec={stop_timeout}
Environment=PYTHONUNBUFFERED=1
UMask=0077
Nice={nice}
IOSchedulingClass=idle
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictNamespaces=yes
RestrictSUIDSGID=yes
SystemCallArchitectures=native

[Install]
WantedBy=default.target
"""


@dataclass(frozen=True)
class ServiceFile:
    """A rendered unit or agent and where it is installed."""

    platform: Platform
    path: Path
    content: str
    command: tuple[str, ...]  # what the service runs


@dataclass(frozen=True)
class Installed:
    file: ServiceFile
    change: Literal["new", "replaced", "unchanged"]


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def no_user_manager(self) -> bool:
        return any(marker in self.stderr for marker in _NO_MANAGER_MARKERS)

    @property
    def reason(self) -> str:
        """The command's own first line of complaint."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()
        return f"exit status {self.returncode}"


Runner = Callable[[Sequence[str]], CommandResult]


def run_command(argv: Sequence[str]) -> CommandResult:
    """Run ``argv`` (looked up on PATH) and collect its output; never raises for its failure."""
    try:
        completed = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=_COMMAND_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        return CommandResult(tuple(argv), 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(argv), 124, "", f"{argv[0]}: no answer after {_COMMAND_TIMEOUT_SECONDS} s")
    return CommandResult(tuple(argv), completed.returncode, completed.stdout, completed.stderr)


@dataclass(frozen=True)
class Step:
    """One command of an activation; ``advisory`` ones may fail (``launchctl bootout`` of an
    agent that is not loaded)."""

    argv: tuple[str, ...]
    advisory: bool = False


def parse_platform(requested: str | None, sys_platform: str) -> Platform:
    """``--platform`` when given, else the platform we run on."""
    if requested is not None:
        if requested not in PLATFORMS:
            raise UsageError("--platform", f"unknown platform {requested!r} (known: {', '.join(PLATFORMS)})")
        return requested
    if sys_platform.startswith("linux"):
        return "linux"
    if sys_platform == "darwin":
        return "macos"
    raise UsageError("", f"no user service support on {sys_platform} (pass --platform linux or macos)")


def program_command(argv0: str, python: str, *, cwd: Path) -> tuple[str, ...]:
    """How a service starts this Postrun again: the console script it was started as, else
    ``<python> -m postrun`` (``python`` as given: a venv's interpreter must not be resolved)."""
    if Path(argv0).name == "postrun":
        script = Path(os.path.normpath(cwd / argv0))
        if script.is_file() and os.access(script, os.X_OK):
            return (str(script),)
    return (os.path.normpath(cwd / python), "-m", "postrun")


def capture_command(program: Sequence[str], *, config_file: Path | None, db: Path | None) -> tuple[str, ...]:
    """``<program> [--config FILE] [--db FILE] capture``: the options that would not reach the
    service otherwise (they were given on this command line or in POSTRUN_CONFIG)."""
    options: list[str] = []
    if config_file is not None:
        options += ["--config", str(config_file)]
    if db is not None:
        options += ["--db", str(db)]
    return (*program, *options, "capture")


def unreachable_variables(environ: Mapping[str, str]) -> list[str]:
    """The ``POSTRUN_*`` settings set in ``environ``: a service never sees a shell's variables."""
    return sorted(name for name in (env_variable(key) for key in SETTING_KEYS) if name in environ)


def _exec_word(word: str, *, program: bool) -> str:
    """One ExecStart= word: systemd expands % specifiers everywhere, $ variables in the
    arguments only (not in the program's path), and splits on blanks outside quotes."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if not program:
        escaped = escaped.replace("$", "$$")
    needs_quotes = not word or any(char.isspace() or char in "'\";" for char in word)
    return f'"{escaped}"' if needs_quotes else escaped


def render_unit(command: Sequence[str]) -> str:
    """The systemd user unit that runs ``command`` (``[...program, "capture"]``).

    Raises PostrunError for a program path systemd refuses (quotes, backslashes, controls).
    """
    program = command[0]
    if any(char in "\\\"'" or not char.isprintable() for char in program):
        raise PostrunError(program, "systemd cannot start a program whose path holds quotes or backslashes")
    return _UNIT_TEMPLATE.format(
        exec_start=" ".join(_exec_word(word, program=index == 0) for index, word in enumerate(command)),
        restart=RESTART_SECONDS,
        watchdog=WATCHDOG_SECONDS,
        stop_timeout=STOP_TIMEOUT_SECONDS,
        nice=NICE,
    )


def render_plist(command: Sequence[str], *, log_file: Path) -> str:
    """The LaunchAgent that runs ``command``; launchd expands nothing, so paths are absolute."""
    agent = {
        "Label": LABEL,
        "ProgramArguments": list(command),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # restart after a failure, not after a clean stop
        "ThrottleInterval": THROTTLE_SECONDS,
        "ExitTimeOut": STOP_TIMEOUT_SECONDS,
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": NICE,
        "StandardOutPath": str(log_file),
        "StandardErrorPath": str(log_file),
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
    }
    return plistlib.dumps(agent, sort_keys=False).decode()


def service_path(platform: Platform, paths: Paths) -> Path:
    if platform == "linux":
        return paths.systemd_user_dir / UNIT_NAME
    return paths.launch_agents_dir / f"{LABEL}.plist"


def service_file(platform: Platform, paths: Paths, command: Sequence[str]) -> ServiceFile:
    content = render_unit(command) if platform == "linux" else render_plist(command, log_file=paths.capture_log)
    return ServiceFile(platform=platform, path=service_path(platform, paths), content=content, command=tuple(command))


def install_file(file: ServiceFile, paths: Paths) -> Installed:
    """Write the unit or agent (and, for launchd, the log folder it appends to)."""
    try:
        previous = file.path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        previous = None
    except OSError as exc:
        raise PostrunError(str(file.path), f"cannot read ({exc.strerror or exc})") from None
    if file.platform == "macos":
        try:
            ensure_private_dir(paths.log_dir)
        except OSError as exc:
            raise PostrunError(str(paths.log_dir), f"cannot create the log folder ({exc.strerror or exc})") from None
    if previous == file.content:
        return Installed(file, "unchanged")
    try:
        file.path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PostrunError(str(file.path.parent), f"cannot create ({exc.strerror or exc})") from None
    write_private_file(file.path, file.content.encode())
    file.path.chmod(_FILE_MODE)  # a unit or agent is not secret; this is their usual mode
    return Installed(file, "new" if previous is None else "replaced")


def activation_steps(platform: Platform, path: Path, *, uid: int, change: str) -> tuple[Step, ...]:
    """The commands that load the installed file (``change`` says how it changed) and start
    the service now."""
    if platform == "linux":
        steps = [
            Step(("systemctl", "--user", "daemon-reload")),
            Step(("systemctl", "--user", "enable", "--now", SERVICE_NAME)),
        ]
        if change == "replaced":  # `enable --now` leaves a running capture on the old unit
            steps.append(Step(("systemctl", "--user", "try-restart", SERVICE_NAME)))
        return tuple(steps)
    bootstrap = Step(("launchctl", "bootstrap", f"gui/{uid}", str(path)))
    if change == "new":
        return (bootstrap,)
    # A loaded agent must be unloaded for the file to count; "not loaded" is fine.
    return (Step(("launchctl", "bootout", f"gui/{uid}/{LABEL}"), advisory=True), bootstrap)


def deactivation_steps(platform: Platform, *, uid: int) -> tuple[Step, ...]:
    """The commands that stop the service and keep it from starting again."""
    if platform == "linux":
        return (Step(("systemctl", "--user", "disable", "--now", SERVICE_NAME)),)
    return (Step(("launchctl", "bootout", f"gui/{uid}/{LABEL}"), advisory=True),)


def after_uninstall_steps(platform: Platform) -> tuple[Step, ...]:
    """What tells the service manager that the file is gone."""
    return (Step(("systemctl", "--user", "daemon-reload")),) if platform == "linux" else ()


def shell_line(steps: Sequence[Step], *, uid: int) -> str:
    """The steps as one line to paste into a shell, ``$(id -u)`` standing for the uid."""
    line = ""
    for index, step in enumerate(steps):
        line += " ".join(shlex.quote(word) for word in step.argv).replace(f"gui/{uid}", "gui/$(id -u)")
        if index < len(steps) - 1:
            line += "; " if step.advisory else " && "
    return line


def run_steps(steps: Sequence[Step], runner: Runner, *, on_run: Callable[[Step], None]) -> list[CommandResult]:
    """Run ``steps`` in order; a failing step that is not advisory stops with a PostrunError."""
    results = []
    for step in steps:
        on_run(step)
        result = runner(step.argv)
        results.append(result)
        if not result.ok and not step.advisory:
            raise PostrunError(" ".join(step.argv), _failure(result))
    return results


def _failure(result: CommandResult) -> str:
    if result.returncode == 127:
        return f"{result.reason} (is this the platform's service manager?)"
    if result.no_user_manager:
        return (
            f"{result.reason}: no user service manager is reachable (log in to a session, or run"
            " `loginctl enable-linger $USER` once so it runs without one)"
        )
    return result.reason


def uninstall_files(platform: Platform, paths: Paths) -> tuple[Path, ...]:
    """Remove the installed unit or agent, and the links ``systemctl --user enable`` made to it.

    Returns what was removed (nothing when it was not installed).
    """
    path = service_path(platform, paths)
    removed: list[Path] = []
    if platform == "linux" and paths.systemd_user_dir.is_dir():
        for link in sorted(paths.systemd_user_dir.glob(f"*.wants/{UNIT_NAME}")):
            if link.is_symlink() and os.path.normpath(link.parent / link.readlink()) == os.path.normpath(path):
                _remove(link)
                removed.append(link)
    if path.exists() or path.is_symlink():
        _remove(path)
        removed.append(path)
    return tuple(removed)


@dataclass(frozen=True)
class InstallReport:
    installed: Installed
    started: bool  # the activation steps ran (``--now``)
    next_line: str | None  # otherwise: the commands to paste into a shell
    notes: tuple[str, ...]  # where the logs are, linger, how to configure the service
    warnings: tuple[str, ...]


def install_service(
    platform: Platform,
    paths: Paths,
    command: Sequence[str],
    *,
    now: bool,
    uid: int,
    environ: Mapping[str, str],
    runner: Runner,
    on_run: Callable[[Step], None],
    on_written: Callable[[Installed], None] = lambda installed: None,
) -> InstallReport:
    """``postrun service install``: write the unit or agent that runs ``command``; with
    ``now``, also load, enable and start it (``on_written`` is told before that)."""
    installed = install_file(service_file(platform, paths, command), paths)
    on_written(installed)
    steps = activation_steps(platform, installed.file.path, uid=uid, change=installed.change)
    if now:
        run_steps(steps, runner, on_run=on_run)
    notes: list[str] = []
    if platform == "linux":
        notes.append("logs: journalctl --user -u postrun -f")
        notes.append(
            "note: without a login session (a server you reach by SSH, a headless machine) the user manager"
            " stops at logout; `loginctl enable-linger $USER` keeps it, and capture, running"
        )
        where = f"{paths.config_file} (or `systemctl --user edit postrun` for Environment= lines)"
    else:
        if not now:
            notes.append(f"  (before macOS 10.11: launchctl load {shlex.quote(str(installed.file.path))})")
        notes.append(f"logs: {paths.capture_log}")
        where = str(paths.config_file)
    notes.append(f"note: POSTRUN_* variables from shell rc files do not reach the service; configure it in {where}")
    unreachable = unreachable_variables(environ)
    warnings = (f"{', '.join(unreachable)} set in this shell will not reach the service",) if unreachable else ()
    return InstallReport(
        installed=installed,
        started=now,
        next_line=None if now else shell_line(steps, uid=uid),
        notes=tuple(notes),
        warnings=warnings,
    )


@dataclass(frozen=True)
class UninstallReport:
    path: Path
    removed: tuple[Path, ...]  # empty: it was not installed
    next_line: str | None  # without ``now``: what stops the service and reloads the manager
    warnings: tuple[str, ...]  # stop or reload commands that failed (removing the files is what matters)


def uninstall_service(
    platform: Platform, paths: Paths, *, now: bool, uid: int, runner: Runner, on_run: Callable[[Step], None]
) -> UninstallReport:
    """``postrun service uninstall``: remove the unit or agent; with ``now``, stop it first."""
    warnings: list[str] = []

    def run_leniently(steps: Sequence[Step]) -> None:
        lenient = [Step(step.argv, advisory=True) for step in steps]
        for result in run_steps(lenient, runner, on_run=on_run):
            if not result.ok:
                warnings.append(f"{' '.join(result.argv)}: {result.reason}")

    if now:
        run_leniently(deactivation_steps(platform, uid=uid))
    removed = uninstall_files(platform, paths)
    reload = after_uninstall_steps(platform)
    next_line = None
    if now:
        run_leniently(reload)
    elif removed:
        # Once the file is gone `disable` has nothing to act on: only stopping remains.
        stop = (
            (Step(("systemctl", "--user", "stop", SERVICE_NAME), advisory=True),)
            if platform == "linux"
            else deactivation_steps(platform, uid=uid)
        )
        next_line = shell_line((*stop, *reload), uid=uid)
    return UninstallReport(service_path(platform, paths), removed, next_line, tuple(warnings))


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise PostrunError(str(path), f"cannot remove ({exc.strerror or exc})") from None


@dataclass(frozen=True)
class State:
    """Whether the service is enabled or running: yes, no, or unknown, with the manager's word."""

    value: bool | None
    detail: str

    def __str__(self) -> str:
        word = {True: "yes", False: "no", None: "unknown"}[self.value]
        return f"{word} ({self.detail})" if self.detail else word


@dataclass(frozen=True)
class ServiceStatus:
    platform: Platform
    user_file: Path  # where `postrun service install` writes
    file: Path | None  # the file in effect (the user's, or a package's), None when not installed
    command: tuple[str, ...] | None  # what that file runs
    enabled: State
    running: State

    @property
    def installed(self) -> bool:
        return self.file is not None


def service_status(
    platform: Platform,
    paths: Paths,
    runner: Runner,
    *,
    uid: int,
    system_unit_dirs: Sequence[Path] = SYSTEM_UNIT_DIRS,
) -> ServiceStatus:
    """Installed (which file), enabled and running, as the platform's service manager sees it."""
    user_file = service_path(platform, paths)
    if platform == "linux":
        candidates = [user_file, *(folder / UNIT_NAME for folder in system_unit_dirs)]
        file = next((candidate for candidate in candidates if candidate.is_file()), None)
        enabled = _systemctl_state(runner, "is-enabled", yes={"enabled", "enabled-runtime", "linked", "alias"})
        running = _systemctl_state(runner, "is-active", yes={"active", "reloading"})
    else:
        candidates = [user_file, paths.launch_agents_dir / f"{HOMEBREW_LABEL}.plist"]
        file = next((candidate for candidate in candidates if candidate.is_file()), None)
        label = LABEL if file is None or file == user_file else HOMEBREW_LABEL
        enabled, running = _launchd_states(runner, label, uid=uid)
    return ServiceStatus(
        platform=platform,
        user_file=user_file,
        file=file,
        command=installed_command(file) if file is not None else None,
        enabled=enabled,
        running=running,
    )


def _systemctl_state(runner: Runner, verb: str, *, yes: set[str]) -> State:
    result = runner(("systemctl", "--user", verb, UNIT_NAME))
    if result.returncode == 127:
        return State(None, "systemctl not found")
    if result.no_user_manager:
        return State(None, NO_USER_MANAGER)
    word = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
    if not word:
        # `is-enabled` of a unit it cannot find says so on stderr only.
        return State(False, "not installed") if "No such file" in result.stderr else State(None, result.reason)
    return State(word in yes, word)


def _launchd_states(runner: Runner, label: str, *, uid: int) -> tuple[State, State]:
    result = runner(("launchctl", "print", f"gui/{uid}/{label}"))
    if result.returncode == 127:
        unknown = State(None, "launchctl not found")
        return unknown, unknown
    if not result.ok:
        # 113: "Could not find service": the agent is not loaded.
        return State(False, "not loaded"), State(False, "not loaded")
    state = ""
    for line in result.stdout.splitlines():
        key, _, value = line.strip().partition(" = ")
        if key == "state":
            state = value.strip()
            break
    return State(True, "loaded"), State(state == "running", state or "state unknown")


def installed_command(path: Path) -> tuple[str, ...] | None:
    """The command an installed unit (``ExecStart=``) or agent (``ProgramArguments``) runs."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if path.suffix == ".plist":
        try:
            arguments = plistlib.loads(data).get("ProgramArguments")
        except (plistlib.InvalidFileException, ValueError, AttributeError):
            return None
        return tuple(str(word) for word in arguments) if isinstance(arguments, list) else None
    for line in data.decode("utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "ExecStart":
            try:
                words = shlex.split(value.lstrip("-@:+!"))
            except ValueError:
                return None
            return tuple(
                word.replace("%%", "%") if index == 0 else word.replace("%%", "%").replace("$$", "$")
                for index, word in enumerate(words)
            )
    return None
