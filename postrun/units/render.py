"""The service's files: the systemd user unit and the launchd agent, rendered and read back.

The files are rendered here, for the running Postrun: the service starts the very executable
that installed it (its console script, else ``<python> -m postrun``). Paths are absolute and
symlinks are kept on purpose: pipx's ``~/.local/bin/postrun`` and Homebrew's
``/opt/homebrew/bin/postrun`` survive upgrades, the version folders they point to do not.
``systemd/postrun.service`` and ``launchd/dev.postrun.capture.plist`` in the repository are
renderings of the same templates (a test keeps them equal).
"""

from __future__ import annotations

import os
import plistlib
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from postrun.errors import PostrunError, UsageError
from postrun.paths import Paths
from postrun.settings import SETTING_KEYS, env_variable

Platform = Literal["linux", "macos"]
PLATFORMS: tuple[Platform, ...] = ("linux", "macos")

UNIT_NAME = "postrun.service"
SERVICE_NAME = "postrun"  # what the user types after `systemctl --user`
LABEL = "dev.postrun.capture"


@dataclass(frozen=True)
class UnitNames:
    """What one service is called: its systemd unit file, its name for systemctl, its launchd label."""

    unit: str
    service: str
    label: str
    log_name: str  # launchd's log file, in the log folder


CAPTURE = UnitNames(UNIT_NAME, SERVICE_NAME, LABEL, "capture.log")

RESTART_SECONDS = 5
WATCHDOG_SECONDS = 60
STOP_TIMEOUT_SECONDS = 20
# launchd cannot exclude exit codes: a second capture (75) or a bad config (78) is respawned,
# at most once per this many seconds (a capture that ran longer is respawned at once).
THROTTLE_SECONDS = 60
NICE = 10

_UNIT_TEMPLATE = """\
# Postrun capture as a per-user service: `systemctl --user enable --now postrun`.
# Configure it in ~/.config/postrun/config.toml: POSTRUN_* variables set in shell rc
# files do not reach it (or add Environment= lines with `systemctl --user edit postrun`).
# Logs: `journalctl --user -u postrun`. Stricter sandboxing: the hardening.conf drop-in.

[Unit]
Description=Postrun capture: record Cline, Claude Code and Codex sessions into the local store
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


def capture_command(
    program: Sequence[str], *, config_file: Path | None, db: Path | None, verb: str = "capture"
) -> tuple[str, ...]:
    """``<program> [--config FILE] [--db FILE] capture`` (or another ``verb``): the options that
    would not reach the service otherwise (they were given on this command line or in POSTRUN_CONFIG)."""
    options: list[str] = []
    if config_file is not None:
        options += ["--config", str(config_file)]
    if db is not None:
        options += ["--db", str(db)]
    return (*program, *options, verb)


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


def exec_line(command: Sequence[str]) -> str:
    """``command`` as an ExecStart= value. Raises PostrunError for a program path systemd refuses
    (quotes, backslashes, controls)."""
    program = command[0]
    if any(char in "\\\"'" or not char.isprintable() for char in program):
        raise PostrunError(program, "systemd cannot start a program whose path holds quotes or backslashes")
    return " ".join(_exec_word(word, program=index == 0) for index, word in enumerate(command))


def render_unit(command: Sequence[str]) -> str:
    """The systemd user unit that runs ``command`` (``[...program, "capture"]``).

    Raises PostrunError for a program path systemd refuses (quotes, backslashes, controls).
    """
    return _UNIT_TEMPLATE.format(
        exec_start=exec_line(command),
        restart=RESTART_SECONDS,
        watchdog=WATCHDOG_SECONDS,
        stop_timeout=STOP_TIMEOUT_SECONDS,
        nice=NICE,
    )


def render_plist(command: Sequence[str], *, log_file: Path, label: str = LABEL) -> str:
    """The LaunchAgent that runs ``command``; launchd expands nothing, so paths are absolute."""
    agent = {
        "Label": label,
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


def service_path(platform: Platform, paths: Paths, names: UnitNames = CAPTURE) -> Path:
    if platform == "linux":
        return paths.systemd_user_dir / names.unit
    return paths.launch_agents_dir / f"{names.label}.plist"


def service_file(platform: Platform, paths: Paths, command: Sequence[str]) -> ServiceFile:
    content = render_unit(command) if platform == "linux" else render_plist(command, log_file=paths.capture_log)
    return ServiceFile(platform=platform, path=service_path(platform, paths), content=content, command=tuple(command))


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
