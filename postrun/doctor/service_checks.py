"""What runs: capture, the user services (capture's and the review app's) and the team mirror."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from postrun.capture.lock import read_capture_info
from postrun.doctor.check import Check
from postrun.errors import ConfigError, PostrunError
from postrun.mirror import DriverMissing, usable_target
from postrun.mirror.target import MirrorTarget
from postrun.paths import Paths
from postrun.text import plural
from postrun.units import NO_USER_MANAGER, WEB, ServiceStatus, unreachable_variables


def check_capture(paths: Paths) -> Check:
    info = read_capture_info(paths.capture_lock)
    if info is None:
        return Check(
            "capture", "warn", "not running", "`postrun service install --now` (or run `postrun capture` in a terminal)"
        )
    details = [info.pid_text, f"since {info.started_at}"]
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
    stale = _stale_unit("service", status, detail, "postrun service install --now")
    if stale is not None:
        return stale
    # systemctl answers is-enabled from the unit files even with no user manager to run the unit
    # (a container, WSL): "enable" would only fail there, so say what records without one (README).
    no_manager = NO_USER_MANAGER in (status.enabled.detail, status.running.detail)
    if status.enabled.value is None or (no_manager and not status.enabled.value):
        hint = _NO_MANAGER_HINT if no_manager else ""
        return Check("service", "warn", f"{detail}; running: {status.running}" if no_manager else detail, hint)
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


_NO_MANAGER_HINT = (
    "no user service manager runs here: `postrun capture --daemon` records without one; on a machine"
    " without a login session, `loginctl enable-linger $USER` keeps the user manager running"
)


def check_web_service(status: ServiceStatus) -> Check:
    """The review app's unit: optional, so only a broken or stopped one warns."""
    if status.file is None:
        return Check("web service", "ok", "not installed (optional: `postrun service install --web --now`)")
    detail = f"{status.file}; enabled: {status.enabled}; running: {status.running}"
    stale = _stale_unit("web service", status, detail, "postrun service install --web --now")
    if stale is not None:
        return stale
    if status.running.value is False:
        command = (
            f"systemctl --user enable --now {WEB.service}"
            if status.platform == "linux"
            else ("postrun service install --web --now")
        )
        return Check("web service", "warn", detail, f"`{command}`")
    return Check("web service", "ok", detail)


def _stale_unit(name: str, status: ServiceStatus, detail: str, reinstall: str) -> Check | None:
    """A warning when the unit starts a program that no longer exists (a moved or removed install)."""
    if status.command and not Path(status.command[0]).exists():
        return Check(
            name,
            "warn",
            f"{detail}; it runs {status.command[0]}, which does not exist",
            f"`{reinstall}` rewrites it for this Postrun",
        )
    return None


def check_mirror(target: MirrorTarget, db: Path, *, redact: bool = True) -> Check:
    """The team mirror answers, at a schema this Postrun knows; a warning otherwise (recording
    never depends on it), and a failure for a ``mirror_url`` libpq refuses (a typo is no outage)."""
    try:
        usable_target(target)
    except DriverMissing as exc:
        return Check("mirror", "warn", str(exc), "without it capture records, and pushes nothing")
    except ConfigError as exc:
        return Check("mirror", "fail", str(exc), "fix mirror_url; `postrun config show` shows it", configuration=True)
    from postrun.mirror.commands import mirror_status  # psycopg: only when a mirror is configured
    from postrun.mirror.reconcile import describe_drift

    try:
        status = mirror_status(target, db, redact=redact)
    except PostrunError as exc:  # the store itself: its own check says what is wrong
        return Check("mirror", "warn", f"not checked: {exc}")
    where = f"{status.target.label} ({status.shown_url})"
    if not status.reach.ok:
        return Check(
            "mirror",
            "warn",
            f"{where}: {status.reach.state}: {status.reach.detail}; {plural(status.waiting, 'session')} waiting",
            _REACH_HINTS.get(status.reach.state, _REACH_HINTS["unreachable"]),
        )
    if status.too_new:
        return Check("mirror", "warn", f"{where}: {status.reach.detail}", "upgrade Postrun on this machine")
    last = f", last push {status.last_push}" if status.last_push else ", never pushed"
    masked = "secrets masked" if redact else "secrets sent in clear (mirror_redact = false)"
    detail = f"{where}: {status.reach.detail}; {masked}; {plural(status.waiting, 'session')} waiting{last}"
    if status.drift is not None and status.drift.sessions:
        return Check("mirror", "warn", f"{detail}; {describe_drift(status.drift)}", "`postrun mirror push` sends them")
    return Check("mirror", "ok", detail)


_REACH_HINTS = {
    "unreachable": "check the server is up and reachable from here; `postrun mirror status`",
    "refused the login": "check the role and its password (~/.pgpass or PGPASSFILE); `postrun mirror status`",
    "refused a permission": "the role needs CONNECT on the database and CREATE (or the schema's grants)",
}
