"""``postrun doctor``: one check per thing that makes capture work, each ok, warn or fail.

Only the configuration, the store and an agent's sessions folder can fail: without them
capture records nothing. Everything else is a warning with a hint, because a machine can be
fine without it (Cline's approval settings may be absent, and then its defaults apply; a
container or an SSH-only machine may have no user service manager).

Here: the checks' order (``run_checks``) and the exit code. The checks themselves:
``store_checks`` (store, exclude, sources), ``machine_checks`` (python, config, inotify, and each
agent's own checks from its adapter: Cline's sessions and approvals), ``service_checks``
(capture, service, web service, mirror); each returns a ``check.Check``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from postrun.agents.registry import adapters, enabled_roots
from postrun.doctor.check import Check
from postrun.doctor.machine_checks import agent_checks, check_config, check_inotify, check_python
from postrun.doctor.service_checks import check_capture, check_mirror, check_service, check_web_service
from postrun.doctor.store_checks import check_exclude, check_sources, check_store
from postrun.errors import ConfigError
from postrun.exitcodes import ExitCode
from postrun.mirror.target import mirror_target
from postrun.paths import Paths, cline_sessions_root, default_db_path, working_dir
from postrun.review.exclude import Exclusions
from postrun.settings import LoadedSettings, load_settings, paths_for
from postrun.units import WEB, Platform, Runner, service_status

INOTIFY_WATCHES_FILE = Path("/proc/sys/fs/inotify/max_user_watches")


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
    """Every check, in a fixed order: python, config, store, exclude, sources, each agent's (Cline's:
    sessions, approvals), capture, service, web service, inotify, and mirror when one is
    configured."""
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
            inputs.environ, db=default_db_path(), cline_dir=cline_sessions_root(inputs.environ, base=working_dir())[0]
        )
        not_checked = "not checked: the configuration does not load"
        agents = [name for agent in adapters() for name in agent.check_names]
        names = ("store", "exclude", "sources", *agents, "capture")
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
    checks.append(check_sources(paths.db))
    found, session_count = agent_checks(loaded, inputs.environ)
    checks += found
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
            roots=len(enabled_roots(loaded, inputs.environ)),
        )
    )
    if loaded.settings.mirror_url is not None:
        target = mirror_target(loaded.settings.mirror_url, loaded.set_in.get("mirror_url", "mirror_url"))
        checks.append(check_mirror(target, paths.db, redact=loaded.settings.mirror_redact))
    return tuple(checks)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None
