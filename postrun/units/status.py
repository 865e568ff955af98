"""``postrun service status``: installed (which file), enabled and running, as the manager sees it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from postrun.paths import Paths
from postrun.units.commands import NO_USER_MANAGER, Runner
from postrun.units.render import CAPTURE, Platform, UnitNames, installed_command, service_path

HOMEBREW_LABEL = "homebrew.mxcl.postrun"  # the agent `brew services start postrun` writes
# Where packages and administrators put user units (systemd.unit(5)); ~/.config wins over them.
SYSTEM_UNIT_DIRS = (Path("/etc/systemd/user"), Path("/usr/local/lib/systemd/user"), Path("/usr/lib/systemd/user"))


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
    names: UnitNames = CAPTURE,
) -> ServiceStatus:
    """Installed (which file), enabled and running, as the platform's service manager sees it."""
    user_file = service_path(platform, paths, names)
    if platform == "linux":
        candidates = [user_file, *(folder / names.unit for folder in system_unit_dirs)]
        file = next((candidate for candidate in candidates if candidate.is_file()), None)
        yes = {"enabled", "enabled-runtime", "linked", "alias"}
        enabled = _systemctl_state(runner, "is-enabled", names.unit, yes=yes)
        running = _systemctl_state(runner, "is-active", names.unit, yes={"active", "reloading"})
    else:
        candidates = [user_file]
        if names == CAPTURE:  # Homebrew's formula runs capture only
            candidates.append(paths.launch_agents_dir / f"{HOMEBREW_LABEL}.plist")
        file = next((candidate for candidate in candidates if candidate.is_file()), None)
        label = names.label if file is None or file == user_file else HOMEBREW_LABEL
        enabled, running = _launchd_states(runner, label, uid=uid)
    return ServiceStatus(
        platform=platform,
        user_file=user_file,
        file=file,
        command=installed_command(file) if file is not None else None,
        enabled=enabled,
        running=running,
    )


def _systemctl_state(runner: Runner, verb: str, unit: str, *, yes: set[str]) -> State:
    result = runner(("systemctl", "--user", verb, unit))
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
