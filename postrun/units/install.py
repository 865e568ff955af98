"""``postrun service install`` and ``uninstall``: write or remove the unit or agent, and (with
``--now``) have the service manager start or stop it."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from postrun.errors import PostrunError
from postrun.paths import Paths, ensure_private_dir, write_private_file
from postrun.units.backup import BACKUP_TIMER, backup_activation, backup_deactivation, backup_files, backup_paths
from postrun.units.commands import Runner, Step, run_steps, shell_line
from postrun.units.render import (
    CAPTURE,
    Platform,
    ServiceFile,
    UnitNames,
    service_file,
    service_path,
    unreachable_variables,
)

_FILE_MODE = 0o644


@dataclass(frozen=True)
class Installed:
    file: ServiceFile
    change: Literal["new", "replaced", "unchanged"]


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


def activation_steps(
    platform: Platform, path: Path, *, uid: int, change: str, names: UnitNames = CAPTURE
) -> tuple[Step, ...]:
    """The commands that load the installed file (``change`` says how it changed) and start
    the service now."""
    if platform == "linux":
        steps = [
            Step(("systemctl", "--user", "daemon-reload")),
            Step(("systemctl", "--user", "enable", "--now", names.service)),
        ]
        if change == "replaced":  # `enable --now` leaves a running capture on the old unit
            steps.append(Step(("systemctl", "--user", "try-restart", names.service)))
        return tuple(steps)
    bootstrap = Step(("launchctl", "bootstrap", f"gui/{uid}", str(path)))
    if change == "new":
        return (bootstrap,)
    # A loaded agent must be unloaded for the file to count; "not loaded" is fine.
    return (Step(("launchctl", "bootout", f"gui/{uid}/{names.label}"), advisory=True), bootstrap)


def deactivation_steps(
    platform: Platform, *, uid: int, backup: bool = False, names: UnitNames = CAPTURE
) -> tuple[Step, ...]:
    """The commands that stop the service (and with ``backup``, the daily backup) and keep them
    from starting again."""
    backup_steps = backup_deactivation(platform, uid=uid) if backup else ()
    if platform == "linux":
        return (Step(("systemctl", "--user", "disable", "--now", names.service)), *backup_steps)
    return (Step(("launchctl", "bootout", f"gui/{uid}/{names.label}"), advisory=True), *backup_steps)


def after_uninstall_steps(platform: Platform) -> tuple[Step, ...]:
    """What tells the service manager that the file is gone."""
    return (Step(("systemctl", "--user", "daemon-reload")),) if platform == "linux" else ()


def uninstall_files(platform: Platform, paths: Paths, names: UnitNames = CAPTURE) -> tuple[Path, ...]:
    """Remove the installed unit or agent (and, with capture's, the daily backup's), and the
    links ``systemctl --user enable`` made to them.

    Returns what was removed (nothing when it was not installed).
    """
    removed: list[Path] = []
    backups = backup_paths(platform, paths) if names == CAPTURE else ()
    for path in (service_path(platform, paths, names), *backups):
        if platform == "linux" and paths.systemd_user_dir.is_dir() and path.name in (names.unit, BACKUP_TIMER):
            for link in sorted(paths.systemd_user_dir.glob(f"*.wants/{path.name}")):
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
    daily_backup: bool = False,
    names: UnitNames = CAPTURE,
    render: Callable[[Platform, Paths, Sequence[str]], ServiceFile] = service_file,
) -> InstallReport:
    """``postrun service install``: write the unit or agent that runs ``command`` (``render``
    makes it); with ``now``, also load, enable and start it (``on_written`` is told before that).
    With ``daily_backup``, also the timer (or agent) of a daily ``postrun backup``."""
    installed = install_file(render(platform, paths, command), paths)
    on_written(installed)
    steps = activation_steps(platform, installed.file.path, uid=uid, change=installed.change, names=names)
    if daily_backup:
        for file in backup_files(platform, paths, command):
            on_written(install_file(file, paths))
        steps += backup_activation(platform, paths, uid=uid)
    if now:
        run_steps(steps, runner, on_run=on_run)
    notes: list[str] = []
    if platform == "linux":
        notes.append(f"logs: journalctl --user -u {names.service} -f")
        notes.append(
            "note: without a login session (a server you reach by SSH, a headless machine) the user manager"
            " stops at logout; `loginctl enable-linger $USER` keeps it, and capture, running"
        )
        where = f"{paths.config_file} (or `systemctl --user edit {names.service}` for Environment= lines)"
    else:
        if not now:
            notes.append(f"  (before macOS 10.11: launchctl load {shlex.quote(str(installed.file.path))})")
        notes.append(f"logs: {paths.log_dir / names.log_name}")
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
    platform: Platform,
    paths: Paths,
    *,
    now: bool,
    uid: int,
    runner: Runner,
    on_run: Callable[[Step], None],
    names: UnitNames = CAPTURE,
) -> UninstallReport:
    """``postrun service uninstall``: remove the unit or agent; with ``now``, stop it first."""
    warnings: list[str] = []

    def run_leniently(steps: Sequence[Step]) -> None:
        lenient = [Step(step.argv, advisory=True) for step in steps]
        for result in run_steps(lenient, runner, on_run=on_run):
            if not result.ok:
                warnings.append(f"{' '.join(result.argv)}: {result.reason}")

    if now:
        backup = names == CAPTURE and any(path.exists() for path in backup_paths(platform, paths))
        run_leniently(deactivation_steps(platform, uid=uid, backup=backup, names=names))
    removed = uninstall_files(platform, paths, names)
    reload = after_uninstall_steps(platform)
    next_line = None
    if now:
        run_leniently(reload)
    elif removed:
        # Once the file is gone `disable` has nothing to act on: only stopping remains.
        stop = (
            (Step(("systemctl", "--user", "stop", names.service), advisory=True),)
            if platform == "linux"
            else deactivation_steps(platform, uid=uid, names=names)
        )
        next_line = shell_line((*stop, *reload), uid=uid)
    return UninstallReport(service_path(platform, paths, names), removed, next_line, tuple(warnings))


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise PostrunError(str(path), f"cannot remove ({exc.strerror or exc})") from None
