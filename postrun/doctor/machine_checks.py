"""This machine's checks: the Python install, the configuration, Cline's files and the inotify limit."""

from __future__ import annotations

import platform as python_platform
import re
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from postrun.agents.cline.approvals import cli_settings_path, global_state_path
from postrun.agents.cline.locate import list_sessions
from postrun.doctor.check import Check
from postrun.errors import PostrunError
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


def check_sessions(root: Path) -> tuple[Check, int | None]:
    """The sessions root exists and can be listed; also returns how many sessions it holds."""
    try:
        listing = list_sessions(root)
    except PostrunError as exc:
        return (
            Check(
                "sessions",
                "fail",
                str(exc),
                "has Cline run on this machine? Otherwise set cline_dir in the config file (or POSTRUN_CLINE_DIR)",
            ),
            None,
        )
    count = len(listing.sessions)
    return Check("sessions", "ok", f"{count} session{'s' if count != 1 else ''} in {root}"), count


def check_approvals(sessions_root: Path) -> Check:
    """Which of Cline's approval settings exist next to the sessions root: the CLI's settings, VS
    Code's ``globalState.json``, or neither (then Cline's defaults decide; a warning)."""
    data_dir = sessions_root.parent
    sources = (
        ("CLI settings", cli_settings_path(data_dir)),
        ("VS Code's globalState.json", global_state_path(data_dir)),
    )
    found = [f"{name} {path}" for name, path in sources if path.is_file()]
    if found:
        return Check("approvals", "ok", "; ".join(found))
    (cli_name, cli_path), (vscode_name, vscode_path) = sources
    return Check(
        "approvals",
        "warn",
        f"neither {cli_name} ({cli_path}) nor {vscode_name} ({vscode_path}): defaults",
        "decisions follow Cline's defaults; if Cline runs here, check that the sessions folder is the one in"
        " its data folder",
    )


def check_inotify(
    platform: Platform, *, use_events: bool, sessions: int | None, read_limit: Callable[[], int | None]
) -> Check:
    """On Linux every watched folder costs one inotify watch, from a per-user limit.

    Capture watches the sessions root and at most MAX_FOLDER_WATCHES active session
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

    needed = min(sessions, MAX_FOLDER_WATCHES) + 1
    detail = f"max_user_watches {limit}; capture watches {needed} folders (the root and the most active sessions)"
    if needed * _WATCH_SHARE > limit:
        return Check("inotify", "warn", f"{detail}: too few left for it", _INOTIFY_HINT)
    return Check("inotify", "ok", detail)
