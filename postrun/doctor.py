"""``postrun doctor``: one check per thing that makes capture work, each ok, warn or fail.

Only the configuration, the store and the Cline sessions folder can fail: without them
capture records nothing. Everything else is a warning with a hint, because a machine can be
fine without it (Cline's approval settings may be absent, and then its defaults apply; a
container or an SSH-only machine may have no user service manager).

Checking the store opens it as every command does, so an older store is migrated and loose
file modes are tightened; the modes are read before that, so the check still reports them.
"""

from __future__ import annotations

import platform as python_platform
import re
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from postrun.agents.cline.approvals import cli_settings_path, global_state_path
from postrun.agents.cline.locate import list_sessions
from postrun.capture.lock import read_capture_info
from postrun.errors import ConfigError, PostrunError, StoreTooNewError
from postrun.exitcodes import ExitCode
from postrun.mirror import require_driver
from postrun.paths import Paths, cline_sessions_root, default_db_path
from postrun.review.exclude import Exclusions
from postrun.settings import LoadedSettings, load_settings, paths_for
from postrun.store.db import STORE_VERSION, Database, StoreMissing
from postrun.store.query import session_workspaces
from postrun.text import plural
from postrun.units import (
    NO_USER_MANAGER,
    WEB,
    Platform,
    Runner,
    ServiceStatus,
    service_status,
    unreachable_variables,
)

Level = Literal["ok", "warn", "fail"]

INOTIFY_WATCHES_FILE = Path("/proc/sys/fs/inotify/max_user_watches")
# Other programs (editors, sync tools) share the per-user watch limit: ask for half of it at most.
_WATCH_SHARE = 2
_INOTIFY_HINT = (
    "raise it: `echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-postrun.conf"
    " && sudo sysctl --system` (until then capture polls the sessions it cannot watch)"
)
_DISTRIBUTION = "postrun"
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Check:
    name: str
    level: Level
    detail: str
    hint: str = ""
    # A failure that every other command reports as a configuration error (exit 78): the
    # configuration itself, or a store written by a newer Postrun.
    configuration: bool = False


@dataclass(frozen=True)
class DoctorInputs:
    """Everything the checks look at, injected."""

    environ: Mapping[str, str]
    config_file: Path | None  # --config
    overrides: Mapping[str, object]  # flags that set settings (--db)
    platform: Platform
    runner: Runner
    uid: int
    inotify_watches_file: Path = INOTIFY_WATCHES_FILE


def exit_code(checks: Sequence[Check]) -> ExitCode:
    """0 when nothing failed; 78 for what every command reports as a configuration error; else 1."""
    failing = [check for check in checks if check.level == "fail"]
    if any(check.configuration for check in failing):
        return ExitCode.CONFIG
    return ExitCode.FAILURE if failing else ExitCode.OK


def run_checks(inputs: DoctorInputs) -> tuple[Check, ...]:
    """Every check, in a fixed order: python, config, store, exclude, sessions, approvals, capture,
    service, web service, inotify, and mirror when one is configured."""
    checks = [check_python()]
    try:
        loaded: LoadedSettings | None = load_settings(
            config_file=inputs.config_file, overrides=inputs.overrides, environ=inputs.environ
        )
    except ConfigError as exc:
        loaded = None
        checks.append(
            Check(
                "config",
                "fail",
                str(exc),
                "fix the value named above; `postrun config show` lists every setting",
                configuration=True,
            )
        )
    if loaded is None:
        # The service's files do not depend on the settings: defaults locate them.
        paths = Paths.build(
            inputs.environ, db=default_db_path(), cline_dir=cline_sessions_root(inputs.environ, base=Path.cwd())[0]
        )
        not_checked = "not checked: the configuration does not load"
        names = ("store", "exclude", "sessions", "approvals", "capture")
        checks += [Check(name, "warn", not_checked) for name in names]
        checks.append(check_service(service_status(inputs.platform, paths, inputs.runner, uid=inputs.uid), {}))
        checks.append(
            check_web_service(service_status(inputs.platform, paths, inputs.runner, uid=inputs.uid, names=WEB))
        )
        checks.append(Check("inotify", "warn", not_checked))
        return tuple(checks)

    paths = paths_for(loaded, inputs.environ)
    checks.append(check_config(loaded))
    checks.append(check_store(paths.db))
    checks.append(check_exclude(Exclusions.of(loaded.settings.exclude, str(paths.home)), paths.db))
    sessions_check, session_count = check_sessions(paths.cline_dir)
    checks.append(sessions_check)
    checks.append(check_approvals(paths.cline_dir))
    checks.append(check_capture(paths))
    status = service_status(inputs.platform, paths, inputs.runner, uid=inputs.uid)
    checks.append(check_service(status, inputs.environ))
    checks.append(check_web_service(service_status(inputs.platform, paths, inputs.runner, uid=inputs.uid, names=WEB)))
    checks.append(
        check_inotify(
            inputs.platform,
            use_events=loaded.settings.use_events,
            sessions=session_count,
            read_limit=lambda: _read_int(inputs.inotify_watches_file),
        )
    )
    if loaded.settings.mirror_url is not None:
        checks.append(check_mirror(loaded.settings.mirror_url, paths.db))
    return tuple(checks)


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


def check_store(db: Path) -> Check:
    """The store opens, passes SQLite's integrity check, is private and at a known version."""
    try:
        modes = _modes(db)
    except FileNotFoundError:
        return Check(
            "store",
            "warn",
            f"no store yet at {db}",
            "it is created by the first capture (`postrun service install --now`) or `postrun ingest`",
        )
    except OSError as exc:
        return Check("store", "fail", f"{db}: cannot inspect ({exc.strerror or exc})", "check the path and its folder")
    try:
        with Database.open(db, create=False) as database:
            problems = database.integrity_problems()
            version = database.user_version()
    except StoreTooNewError as exc:
        return Check("store", "fail", str(exc), "upgrade Postrun", configuration=True)
    except StoreMissing:
        return Check("store", "warn", f"no store yet at {db}", "it is created by the first capture")
    except PostrunError as exc:
        return Check("store", "fail", str(exc), f"check the file; move it aside to start a new store ({db})")
    if problems != ["ok"]:
        return Check(
            "store",
            "fail",
            f"{db}: integrity check failed: {problems[0]}",
            "stop capture, move the file aside and run `postrun capture --once` to rebuild it from Cline's files",
        )
    detail = f"{db} (schema version {version} of {STORE_VERSION}, integrity ok)"
    loose = [f"{path} was {mode:04o}" for path, mode in modes if mode & 0o077]
    if loose:
        return Check(
            "store",
            "warn",
            f"{detail}; readable by others: {', '.join(loose)}",
            f"chmod 700 {db.parent} && chmod 600 {db} (opening the store tightens the files, not the folder)",
        )
    return Check("store", "ok", detail)


def check_exclude(exclusions: Exclusions, db: Path) -> Check:
    """The ``exclude`` patterns, and the stored sessions they match (stored before the pattern was
    added: they are kept until forgotten explicitly)."""
    if not exclusions.patterns:
        return Check("exclude", "ok", "nothing excluded (setting `exclude`)")
    shown = ", ".join(exclusions.patterns)
    try:
        with Database.open(db, create=False) as database:
            stored = session_workspaces(database)
    except PostrunError:
        stored = []
    matched = [(session_id, root) for session_id, root in stored if exclusions.matching(root) is not None]
    if matched:
        listed = ", ".join(f"{session_id} ({root})" for session_id, root in matched[:5])
        more = f" and {len(matched) - 5} more" if len(matched) > 5 else ""
        return Check(
            "exclude",
            "warn",
            f"excluded: {shown}; {len(matched)} stored session(s) were recorded before: {listed}{more}",
            f"they are kept as they are; `postrun forget {matched[0][0]}` removes one for good",
        )
    return Check("exclude", "ok", f"excluded: {shown}")


def _modes(db: Path) -> list[tuple[Path, int]]:
    """The permission bits of the store's folder and file (which must exist)."""
    return [(path, stat.S_IMODE(path.stat().st_mode)) for path in (db.parent, db)]


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


def check_capture(paths: Paths) -> Check:
    info = read_capture_info(paths.capture_lock)
    if info is None:
        return Check(
            "capture", "warn", "not running", "`postrun service install --now` (or run `postrun capture` in a terminal)"
        )
    details = [f"pid {info.pid}", f"since {info.started_at}"]
    if info.last_ingest:
        details.append(f"last ingest {info.last_ingest}")
    details.append(f"{info.sessions_watched} sessions watched")
    return Check("capture", "ok", f"running ({', '.join(details)})")


def check_service(status: ServiceStatus, environ: Mapping[str, str]) -> Check:
    """Installed and enabled; also that it starts an executable that still exists and that no
    POSTRUN_* setting is left in the shell, where the service cannot see it."""
    if status.file is None:
        return Check("service", "warn", "not installed", "`postrun service install --now`")
    detail = f"{status.file}; enabled: {status.enabled}"
    if status.command and not Path(status.command[0]).exists():
        return Check(
            "service",
            "warn",
            f"{detail}; it runs {status.command[0]}, which does not exist",
            "`postrun service install --now` rewrites it for this Postrun",
        )
    if status.enabled.value is None:
        hint = ""
        if status.enabled.detail == NO_USER_MANAGER:
            hint = "no user service manager here; on a machine without a login session: `loginctl enable-linger $USER`"
        return Check("service", "warn", detail, hint)
    if not status.enabled.value:
        command = (
            "systemctl --user enable --now postrun" if status.platform == "linux" else "postrun service install --now"
        )
        return Check("service", "warn", detail, f"`{command}`")
    shell_settings = unreachable_variables(environ)
    if shell_settings:
        return Check(
            "service",
            "warn",
            f"{detail}; {', '.join(shell_settings)} set here does not reach the service",
            "put the setting in the config file (`postrun config path`)",
        )
    return Check("service", "ok", detail)


def check_web_service(status: ServiceStatus) -> Check:
    """The review app's unit: optional, so only a broken or stopped one warns."""
    if status.file is None:
        return Check("web service", "ok", "not installed (optional: `postrun service install --web --now`)")
    detail = f"{status.file}; enabled: {status.enabled}; running: {status.running}"
    if status.command and not Path(status.command[0]).exists():
        return Check(
            "web service",
            "warn",
            f"{detail}; it runs {status.command[0]}, which does not exist",
            "`postrun service install --web --now` rewrites it for this Postrun",
        )
    if status.running.value is False:
        command = (
            f"systemctl --user enable --now {WEB.service}"
            if status.platform == "linux"
            else ("postrun service install --web --now")
        )
        return Check("web service", "warn", detail, f"`{command}`")
    return Check("web service", "ok", detail)


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


def check_mirror(url: str, db: Path) -> Check:
    """The team mirror answers, at a schema this Postrun knows; a warning otherwise (recording
    never depends on it)."""
    try:
        require_driver("mirror")
    except PostrunError as exc:
        return Check("mirror", "warn", str(exc), "the mirror needs the postgres extra")
    from postrun.mirror.commands import mirror_status  # psycopg: only when a mirror is configured

    try:
        status = mirror_status(url, db)
    except PostrunError as exc:  # the store itself: its own check says what is wrong
        return Check("mirror", "warn", f"not checked: {exc}")
    where = f"{status.target.label} ({status.shown_url})"
    if not status.reach.ok:
        return Check(
            "mirror",
            "warn",
            f"{where}: {status.reach.detail}; {plural(status.waiting, 'session')} waiting",
            "check the server, the role and its password (~/.pgpass or PGPASSFILE); `postrun mirror status`",
        )
    if status.too_new:
        return Check("mirror", "warn", f"{where}: {status.reach.detail}", "upgrade Postrun on this machine")
    last = f", last push {status.last_push}" if status.last_push else ", never pushed"
    return Check("mirror", "ok", f"{where}: {status.reach.detail}; {plural(status.waiting, 'session')} waiting{last}")


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None
