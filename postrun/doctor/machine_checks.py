"""This machine's checks: the Python install, the configuration, each agent's files and the inotify limit."""

from __future__ import annotations

import platform as python_platform
import re
import sys
from collections.abc import Callable, Mapping
from importlib import metadata

from postrun.agents.registry import adapters
from postrun.doctor.check import Check
from postrun.settings import LoadedSettings
from postrun.units import Platform

# Other programs (editors, sync tools) share the per-user watch limit: ask for half of it at most.
_WATCH_SHARE = 2
_INOTIFY_HINT = (
    "raise it: `echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-postrun.conf"
    " && sudo sysctl --system` (until then capture polls the sessions it cannot watch)"
)
_DISTRIBUTION = "postrun"
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_python() -> Check:
    """The interpreter and the version of every installed dependency."""
    found = [f"Python {python_platform.python_version()} ({sys.executable})"]
    try:
        requirements = metadata.requires(_DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return Check(
            "python",
            "warn",
            found[0] + "; postrun's package metadata is missing",
            "install Postrun (`pipx install postrun`, a package, or `pip install .`) rather than running a source tree",
        )
    missing = []
    for requirement in requirements:
        match = _REQUIREMENT_NAME.match(requirement)
        if match is None or "extra ==" in requirement:
            continue
        name = match.group(0)
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return Check(
            "python", "warn", f"missing: {', '.join(missing)}", "reinstall Postrun so its dependencies come along"
        )
    return Check("python", "ok", ", ".join(found))


def check_config(loaded: LoadedSettings) -> Check:
    where = str(loaded.config_path) if loaded.config_found else f"{loaded.config_path} (absent: defaults)"
    if loaded.warnings:
        return Check("config", "warn", f"{where}; {'; '.join(loaded.warnings)}", "remove or rename those variables")
    return Check("config", "ok", where)


def agent_checks(loaded: LoadedSettings, environ: Mapping[str, str]) -> tuple[list[Check], int | None]:
    """Each agent's own checks (its folders, its settings), for every agent capture watches;
    also how many sessions their roots hold together (None: no root could be listed)."""
    checks: list[Check] = []
    sessions: int | None = None
    for agent in adapters(loaded.settings.agents):
        for found in agent.checks(agent.roots(loaded, environ)):
            checks.append(Check(found.name, found.level, found.detail, found.hint))
            if found.sessions is not None:
                sessions = (sessions or 0) + found.sessions
    return checks, sessions


def check_inotify(
    platform: Platform,
    *,
    use_events: bool,
    sessions: int | None,
    read_limit: Callable[[], int | None],
    roots: int = 1,
) -> Check:
    """On Linux every watched folder costs one inotify watch, from a per-user limit.

    Capture watches each agent's root and at most MAX_FOLDER_WATCHES active session
    folders (polling covers the rest), so that is what the limit must leave room for.
    """
    if platform != "linux":
        return Check("inotify", "ok", f"not used on {platform}")
    if not use_events:
        return Check("inotify", "ok", "not used (use_events = false: capture polls)")
    limit = read_limit()
    if limit is None:
        return Check("inotify", "warn", "cannot read fs.inotify.max_user_watches", "is /proc mounted?")
    if sessions is None:
        return Check("inotify", "ok", f"max_user_watches {limit} (no sessions folder to count)")
    from postrun.capture.watcher import MAX_FOLDER_WATCHES  # watchdog: only when this check runs

    needed = min(sessions, MAX_FOLDER_WATCHES * roots) + roots
    what = "the root" if roots == 1 else f"{roots} roots"
    detail = f"max_user_watches {limit}; capture watches {needed} folders ({what} and the most active sessions)"
    if needed * _WATCH_SHARE > limit:
        return Check("inotify", "warn", f"{detail}: too few left for it", _INOTIFY_HINT)
    return Check("inotify", "ok", detail)
