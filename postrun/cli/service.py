"""``postrun service install|uninstall|status`` and ``postrun doctor``."""

from __future__ import annotations

import os
import shlex
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from postrun.cli.app import app
from postrun.cli.common import command, load, rerun_command, say, state

if TYPE_CHECKING:
    from postrun.units import Platform, Step

service_app = typer.Typer(
    help="Run capture as a per-user service (systemd --user on Linux, launchd on macOS).", no_args_is_help=True
)
app.add_typer(service_app, name="service")

PlatformOption = Annotated[
    str | None, typer.Option("--platform", help="linux or macos (default: this machine's).", show_default=False)
]


def _platform(requested: str | None) -> Platform:
    from postrun import units

    return units.parse_platform(requested, sys.platform)


def _echo_step(step: Step) -> None:
    typer.echo("$ " + " ".join(shlex.quote(word) for word in step.argv))


@service_app.command("install")
@command
def service_install(
    platform: PlatformOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the file instead of writing it.")] = False,
    now: Annotated[bool, typer.Option("--now", help="Also load, enable and start the service now.")] = False,
    daily_backup: Annotated[
        bool, typer.Option("--daily-backup", help="Also back up the store daily, keeping the newest 7.")
    ] = False,
    web: Annotated[
        bool, typer.Option("--web", help="Also install the review app (`postrun serve`) as postrun-web.")
    ] = False,
) -> None:
    """Write the user unit (or LaunchAgent) that runs `postrun capture`, for this Postrun."""
    from postrun import units

    target = _platform(platform)
    loaded, paths = load()
    run = rerun_command(loaded, "capture")
    serve = rerun_command(loaded, "serve") if web else None
    if dry_run:
        files = [units.service_file(target, paths, run)]
        if daily_backup:
            files += units.backup_files(target, paths, run)
        if serve is not None:
            files.append(units.web_service_file(target, paths, serve))
        for file in files:
            typer.echo(file.content, nl=False)
            say(f"dry run: would write {file.path}")
        return

    def written(installed: units.Installed) -> None:
        verb = {"new": "wrote", "replaced": "updated", "unchanged": "unchanged:"}[installed.change]
        typer.echo(f"{verb} {installed.file.path}")
        typer.echo(f"runs: {shlex.join(installed.file.command)}")

    report = units.install_service(
        target,
        paths,
        run,
        now=now,
        uid=os.getuid(),
        environ=os.environ,
        runner=units.run_command,
        on_run=_echo_step,
        on_written=written,
        daily_backup=daily_backup,
    )
    if report.started:
        typer.echo("started: `postrun service status` shows it, `postrun doctor` checks the rest")
    else:
        typer.echo(f"next: {report.next_line}")
    for note in report.notes:
        typer.echo(note)
    for warning in report.warnings:
        say(f"warning: {warning}")
    if serve is not None:
        web_report = units.install_service(
            target,
            paths,
            serve,
            now=now,
            uid=os.getuid(),
            environ={},  # its settings are capture's: warned about once, above
            runner=units.run_command,
            on_run=_echo_step,
            on_written=written,
            names=units.WEB,
            render=units.web_service_file,
        )
        typer.echo("review app: `postrun open` opens it" if web_report.started else f"next: {web_report.next_line}")


@service_app.command("uninstall")
@command
def service_uninstall(
    platform: PlatformOption = None,
    now: Annotated[bool, typer.Option("--now", help="Also stop the service now.")] = False,
) -> None:
    """Remove the user units (or LaunchAgents) that `postrun service install` wrote (capture's, the review app's)."""
    from postrun import units

    target = _platform(platform)
    _, paths = load()
    for names in (units.CAPTURE, units.WEB):
        if names == units.WEB and not units.service_path(target, paths, names).exists():
            continue  # the review app's unit is optional: nothing to stop or remove
        report = units.uninstall_service(
            target, paths, now=now, uid=os.getuid(), runner=units.run_command, on_run=_echo_step, names=names
        )
        for warning in report.warnings:
            say(f"warning: {warning}")
        for path in report.removed:
            typer.echo(f"removed {path}")
        if not report.removed and names == units.CAPTURE:
            typer.echo(f"not installed: {report.path}")
        if report.next_line:
            typer.echo(f"next: {report.next_line}")


@service_app.command("status")
@command
def service_status(platform: PlatformOption = None) -> None:
    """Whether the service is installed, enabled and running."""
    from postrun import units

    target = _platform(platform)
    _, paths = load()
    status = units.service_status(target, paths, units.run_command, uid=os.getuid())
    if status.file is None:
        typer.echo(f"installed: no ({status.user_file} does not exist)")
    else:
        typer.echo(f"installed: yes ({status.file})")
        if status.command:
            typer.echo(f"runs: {shlex.join(status.command)}")
    typer.echo(f"enabled: {status.enabled}")
    typer.echo(f"running: {status.running}")
    web = units.service_status(target, paths, units.run_command, uid=os.getuid(), names=units.WEB)
    if web.file is None:
        typer.echo("review app: not installed (`postrun service install --web`)")
    else:
        typer.echo(f"review app: installed ({web.file}); enabled: {web.enabled}; running: {web.running}")


@app.command("doctor")
@command
def doctor_command() -> None:
    """Check everything capture needs; one line per check, exit 1 when one fails (78: the configuration)."""
    from postrun import doctor, units

    overrides = {"db": state.db} if state.db is not None else {}
    checks = doctor.run_checks(
        doctor.DoctorInputs(
            environ=os.environ,
            config_file=state.config,
            overrides=overrides,
            platform=_platform(None),
            runner=units.run_command,
            uid=os.getuid(),
        )
    )
    for check in checks:
        typer.echo(f"{check.level:<4}  {check.name}: {check.detail}")
        if check.level != "ok" and check.hint:
            typer.echo(f"      hint: {check.hint}")
    raise typer.Exit(int(doctor.exit_code(checks)))
