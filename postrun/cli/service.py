"""``postrun service install|uninstall|status`` and ``postrun doctor``."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from postrun import doctor, service_files
from postrun.cli.app import app
from postrun.cli.common import command, load, say, state
from postrun.paths import CONFIG_VARIABLE, Paths, env_value
from postrun.service_files import Platform, Step

service_app = typer.Typer(
    help="Run capture as a per-user service (systemd --user on Linux, launchd on macOS).", no_args_is_help=True
)
app.add_typer(service_app, name="service")

PlatformOption = Annotated[
    str | None, typer.Option("--platform", help="linux or macos (default: this machine's).", show_default=False)
]


def _platform(requested: str | None) -> Platform:
    return service_files.parse_platform(requested, sys.platform)


def _echo_step(step: Step) -> None:
    typer.echo("$ " + " ".join(shlex.quote(word) for word in step.argv))


@service_app.command("install")
@command
def service_install(
    platform: PlatformOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the file instead of writing it.")] = False,
    now: Annotated[bool, typer.Option("--now", help="Also load, enable and start the service now.")] = False,
) -> None:
    """Write the user unit (or LaunchAgent) that runs `postrun capture`, for this Postrun."""
    target = _platform(platform)
    loaded, paths = load()
    named_config = state.config is not None or env_value(os.environ, CONFIG_VARIABLE) is not None
    program = service_files.program_command(sys.argv[0], sys.executable, cwd=Path.cwd())
    run = service_files.capture_command(
        program,
        config_file=loaded.config_path if named_config else None,
        db=loaded.settings.db if state.db is not None else None,
    )
    file = service_files.service_file(target, paths, run)
    if dry_run:
        typer.echo(file.content, nl=False)
        say(f"dry run: would write {file.path}")
        return
    installed = service_files.install_file(file, paths)
    verb = {"new": "wrote", "replaced": "updated", "unchanged": "unchanged:"}[installed.change]
    typer.echo(f"{verb} {file.path}")
    typer.echo(f"runs: {shlex.join(file.command)}")
    uid = os.getuid()
    steps = service_files.activation_steps(target, file.path, uid=uid, change=installed.change)
    if now:
        service_files.run_steps(steps, service_files.run_command, on_run=_echo_step)
        typer.echo("started: `postrun service status` shows it, `postrun doctor` checks the rest")
    else:
        typer.echo(f"next: {service_files.shell_line(steps, uid=uid)}")
        if target == "macos":
            typer.echo(f"  (before macOS 10.11: launchctl load {shlex.quote(str(file.path))})")
    _print_notes(target, paths)


def _print_notes(target: Platform, paths: Paths) -> None:
    if target == "linux":
        typer.echo("logs: journalctl --user -u postrun -f")
        typer.echo(
            "note: without a login session (a server you reach by SSH, a headless machine) the user manager"
            " stops at logout; `loginctl enable-linger $USER` keeps it, and capture, running"
        )
        where = f"{paths.config_file} (or `systemctl --user edit postrun` for Environment= lines)"
    else:
        typer.echo(f"logs: {paths.capture_log}")
        where = str(paths.config_file)
    typer.echo(f"note: POSTRUN_* variables from shell rc files do not reach the service; configure it in {where}")
    shell_settings = service_files.unreachable_variables(os.environ)
    if shell_settings:
        say(f"warning: {', '.join(shell_settings)} set in this shell will not reach the service")


@service_app.command("uninstall")
@command
def service_uninstall(
    platform: PlatformOption = None,
    now: Annotated[bool, typer.Option("--now", help="Also stop the service now.")] = False,
) -> None:
    """Remove the user unit (or LaunchAgent) that `postrun service install` wrote."""
    target = _platform(platform)
    _, paths = load()
    uid = os.getuid()
    stop = service_files.deactivation_steps(target, uid=uid)
    if now:
        _run_leniently(stop)
    removed = service_files.uninstall_files(target, paths)
    for path in removed:
        typer.echo(f"removed {path}")
    if not removed:
        typer.echo(f"not installed: {service_files.service_path(target, paths)}")
    reload = service_files.after_uninstall_steps(target)
    if now:
        _run_leniently(reload)
    elif removed:
        typer.echo(f"next: {service_files.shell_line((*_stop_only(target, stop), *reload), uid=uid)}")


def _stop_only(target: Platform, stop: tuple[Step, ...]) -> tuple[Step, ...]:
    # Once the file is gone `disable` has nothing to act on: only stopping remains.
    if target == "linux":
        return (Step(("systemctl", "--user", "stop", service_files.SERVICE_NAME), advisory=True),)
    return stop


def _run_leniently(steps: tuple[Step, ...]) -> None:
    """Run the steps; a failure is a warning, since removing the files is what matters."""
    for result in service_files.run_steps(
        [Step(step.argv, advisory=True) for step in steps], service_files.run_command, on_run=_echo_step
    ):
        if not result.ok:
            say(f"warning: {' '.join(result.argv)}: {result.reason}")


@service_app.command("status")
@command
def service_status(platform: PlatformOption = None) -> None:
    """Whether the service is installed, enabled and running."""
    target = _platform(platform)
    _, paths = load()
    status = service_files.service_status(target, paths, service_files.run_command, uid=os.getuid())
    if status.file is None:
        typer.echo(f"installed: no ({status.user_file} does not exist)")
    else:
        typer.echo(f"installed: yes ({status.file})")
        if status.command:
            typer.echo(f"runs: {shlex.join(status.command)}")
    typer.echo(f"enabled: {status.enabled}")
    typer.echo(f"running: {status.running}")


@app.command("doctor")
@command
def doctor_command() -> None:
    """Check everything capture needs; one line per check, exit 1 when one fails (78: the configuration)."""
    overrides = {"db": state.db} if state.db is not None else {}
    checks = doctor.run_checks(
        doctor.DoctorInputs(
            environ=os.environ,
            config_file=state.config,
            overrides=overrides,
            platform=_platform(None),
            runner=service_files.run_command,
            uid=os.getuid(),
        )
    )
    for check in checks:
        typer.echo(f"{check.level:<4}  {check.name}: {check.detail}")
        if check.level != "ok" and check.hint:
            typer.echo(f"      hint: {check.hint}")
    raise typer.Exit(int(doctor.exit_code(checks)))
