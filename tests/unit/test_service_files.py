"""Rendering, installing and querying the user service, with a recording fake for systemctl/launchctl."""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from postrun.errors import PostrunError, UsageError
from postrun.paths import Paths
from postrun.units import (
    LABEL,
    CommandResult,
    Step,
    activation_steps,
    install_file,
    installed_command,
    parse_platform,
    program_command,
    render_unit,
    run_steps,
    service_file,
    service_status,
    shell_line,
    uninstall_files,
    unreachable_variables,
)


def make_paths(tmp_path: Path) -> Paths:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "postrun"
    logs = home / ".local" / "state" / "postrun" / "log"
    return Paths(
        home=home,
        db=data / "postrun.db",
        data_dir=data,
        capture_lock=data / "postrun.db.capture.lock",
        mirror_lock=data / "postrun.db.mirror.lock",
        cline_dir=home / ".cline" / "data" / "sessions",
        cline_default_sessions=home / ".cline" / "data" / "sessions",
        config_file=home / ".config" / "postrun" / "config.toml",
        log_dir=logs,
        capture_log=logs / "capture.log",
        systemd_user_dir=home / ".config" / "systemd" / "user",
        launch_agents_dir=home / "Library" / "LaunchAgents",
        web_state=home / ".local" / "state" / "postrun" / "serve.json",
    )


class Recorder:
    """Answers each command from a table (by its first words) and records every call."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        call = tuple(argv)
        self.calls.append(call)
        for prefix, answer in self.answers.items():
            if call[: len(prefix)] == prefix:
                return CommandResult(call, answer.returncode, answer.stdout, answer.stderr)
        return CommandResult(call, 0, "", "")


def answer(returncode: int = 0, stdout: str = "", stderr: str = "") -> CommandResult:
    return CommandResult((), returncode, stdout, stderr)


NO_BUS = answer(1, stderr="Failed to connect to bus: No medium found\n")


def test_program_is_the_console_script_it_was_started_as(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "postrun"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    link = tmp_path / "link-bin" / "postrun"  # pipx and Homebrew link their scripts: keep the link
    link.parent.mkdir()
    link.symlink_to(script)
    assert program_command(str(link), "/usr/bin/python3", cwd=tmp_path) == (str(link),)
    assert program_command("bin/postrun", "/usr/bin/python3", cwd=tmp_path) == (str(script),)


def test_program_falls_back_to_the_interpreter_unresolved(tmp_path: Path) -> None:
    venv_python = tmp_path / "venv" / "bin" / "python"
    main_file = tmp_path / "src" / "postrun" / "__main__.py"
    assert program_command(str(main_file), str(venv_python), cwd=tmp_path) == (str(venv_python), "-m", "postrun")
    not_executable = tmp_path / "postrun"
    not_executable.write_text("")
    assert program_command(str(not_executable), str(venv_python), cwd=tmp_path)[1:] == ("-m", "postrun")


def test_platform_is_the_requested_one_or_this_machines() -> None:
    assert parse_platform("macos", "linux") == "macos"
    assert parse_platform(None, "linux") == "linux"
    assert parse_platform(None, "darwin") == "macos"
    with pytest.raises(UsageError, match="--platform: unknown platform 'windows'"):
        parse_platform("windows", "linux")
    with pytest.raises(UsageError, match="no user service support on win32"):
        parse_platform(None, "win32")


def test_unit_refuses_a_program_path_systemd_would_refuse() -> None:
    with pytest.raises(PostrunError, match="quotes or backslashes"):
        render_unit(['/home/o"brien/bin/postrun', "capture"])


def test_install_reports_new_unchanged_and_replaced_and_writes_0644(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    first = service_file("linux", paths, ["/usr/bin/postrun", "capture"])
    assert install_file(first, paths).change == "new"
    assert first.path == paths.systemd_user_dir / "postrun.service"
    assert first.path.read_text() == first.content
    assert first.path.stat().st_mode & 0o777 == 0o644
    assert install_file(first, paths).change == "unchanged"
    other = service_file("linux", paths, ["/opt/postrun/bin/postrun", "capture"])
    assert install_file(other, paths).change == "replaced"
    assert installed_command(other.path) == ("/opt/postrun/bin/postrun", "capture")


def test_macos_install_creates_the_private_log_folder_launchd_appends_to(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    file = service_file("macos", paths, ["/opt/homebrew/bin/postrun", "capture"])
    install_file(file, paths)
    assert file.path == paths.launch_agents_dir / f"{LABEL}.plist"
    assert plistlib.loads(file.path.read_bytes())["StandardErrorPath"] == str(paths.capture_log)
    assert paths.log_dir.stat().st_mode & 0o777 == 0o700
    assert installed_command(file.path) == ("/opt/homebrew/bin/postrun", "capture")


def test_activation_commands_are_the_documented_ones(tmp_path: Path) -> None:
    unit = tmp_path / "postrun.service"
    assert shell_line(activation_steps("linux", unit, uid=501, change="new"), uid=501) == (
        "systemctl --user daemon-reload && systemctl --user enable --now postrun"
    )
    assert activation_steps("linux", unit, uid=501, change="replaced")[-1].argv == (
        "systemctl",
        "--user",
        "try-restart",
        "postrun",
    )
    agent = tmp_path / "Library" / "dev.postrun.capture.plist"
    assert shell_line(activation_steps("macos", agent, uid=501, change="new"), uid=501) == (
        f"launchctl bootstrap gui/$(id -u) {agent}"
    )
    replaced = activation_steps("macos", agent, uid=501, change="replaced")
    assert [step.argv for step in replaced] == [
        ("launchctl", "bootout", f"gui/501/{LABEL}"),
        ("launchctl", "bootstrap", "gui/501", str(agent)),
    ]
    assert shell_line(replaced, uid=501).startswith(f"launchctl bootout gui/$(id -u)/{LABEL}; launchctl bootstrap")


def test_run_steps_stops_at_a_failure_and_explains_a_missing_user_manager() -> None:
    runner = Recorder({("systemctl", "--user", "daemon-reload"): NO_BUS})
    steps = activation_steps("linux", Path("/x"), uid=0, change="new")
    with pytest.raises(PostrunError, match="loginctl enable-linger") as raised:
        run_steps(steps, runner, on_run=lambda step: None)
    assert str(raised.value).startswith("systemctl --user daemon-reload: Failed to connect to bus")
    assert runner.calls == [("systemctl", "--user", "daemon-reload")]


def test_run_steps_goes_past_an_advisory_failure() -> None:
    runner = Recorder({("launchctl", "bootout"): answer(113, stderr="Boot-out failed: 113: Could not find service")})
    seen: list[Step] = []
    results = run_steps(
        activation_steps("macos", Path("/a.plist"), uid=7, change="unchanged"), runner, on_run=seen.append
    )
    assert [result.returncode for result in results] == [113, 0]
    assert len(seen) == 2


def test_uninstall_removes_the_unit_and_only_the_links_to_it(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    file = service_file("linux", paths, ["/usr/bin/postrun", "capture"])
    install_file(file, paths)
    wants = paths.systemd_user_dir / "default.target.wants"
    wants.mkdir()
    (wants / "postrun.service").symlink_to(file.path)
    other_wants = paths.systemd_user_dir / "graphical-session.target.wants"
    other_wants.mkdir()
    package_link = other_wants / "postrun.service"
    package_link.symlink_to("/usr/lib/systemd/user/postrun.service")  # the user enabled a package's unit
    removed = uninstall_files("linux", paths)
    assert set(removed) == {file.path, wants / "postrun.service"}
    assert not file.path.exists() and not (wants / "postrun.service").is_symlink()
    assert package_link.is_symlink()
    assert uninstall_files("linux", paths) == ()


def test_status_without_a_user_manager_is_unknown_not_broken(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    install_file(service_file("linux", paths, ["/usr/bin/postrun", "capture"]), paths)
    status = service_status("linux", paths, Recorder({("systemctl",): NO_BUS}), uid=0, system_unit_dirs=())
    assert status.installed and status.file == paths.systemd_user_dir / "postrun.service"
    assert str(status.enabled) == "unknown (no user manager)"
    assert str(status.running) == "unknown (no user manager)"


def test_status_reads_systemctl_words(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    package_unit = tmp_path / "usr-lib" / "postrun.service"
    package_unit.parent.mkdir()
    package_unit.write_text(render_unit(["/usr/bin/postrun", "capture"]))
    runner = Recorder(
        {
            ("systemctl", "--user", "is-enabled"): answer(0, "enabled\n"),
            ("systemctl", "--user", "is-active"): answer(3, "inactive\n"),
        }
    )
    status = service_status("linux", paths, runner, uid=0, system_unit_dirs=[package_unit.parent])
    assert status.file == package_unit  # a package's unit counts as installed
    assert status.command == ("/usr/bin/postrun", "capture")
    assert (str(status.enabled), str(status.running)) == ("yes (enabled)", "no (inactive)")
    missing = service_status(
        "linux",
        make_paths(tmp_path / "other"),
        Recorder(
            {
                ("systemctl",): answer(
                    1, stderr="Failed to get unit file state for postrun.service: No such file or directory"
                )
            }
        ),
        uid=0,
        system_unit_dirs=(),
    )
    assert not missing.installed and missing.enabled.value is False


def test_status_reads_launchctl_print(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    install_file(service_file("macos", paths, ["/opt/homebrew/bin/postrun", "capture"]), paths)
    loaded = Recorder(
        {("launchctl", "print"): answer(0, f"gui/501/{LABEL} = {{\n\tstate = running\n\tpid = 4242\n}}\n")}
    )
    status = service_status("macos", paths, loaded, uid=501)
    assert loaded.calls == [("launchctl", "print", f"gui/501/{LABEL}")]
    assert (status.enabled.value, status.running.value, status.running.detail) == (True, True, "running")
    gone = service_status(
        "macos", paths, Recorder({("launchctl",): answer(113, stderr="Could not find service")}), uid=501
    )
    assert (gone.enabled.value, gone.running.value) == (False, False)
    absent = service_status("macos", paths, Recorder({("launchctl",): answer(127)}), uid=501)
    assert str(absent.running) == "unknown (launchctl not found)"


def test_homebrew_services_agent_counts_as_installed(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    paths.launch_agents_dir.mkdir(parents=True)
    brew = paths.launch_agents_dir / "homebrew.mxcl.postrun.plist"
    brew.write_bytes(
        plistlib.dumps(
            {"Label": "homebrew.mxcl.postrun", "ProgramArguments": ["/opt/homebrew/opt/postrun/bin/postrun", "capture"]}
        )
    )
    runner = Recorder()
    status = service_status("macos", paths, runner, uid=501)
    assert status.file == brew and runner.calls == [("launchctl", "print", "gui/501/homebrew.mxcl.postrun")]


def test_only_setting_variables_are_named_as_unreachable() -> None:
    environ = {"POSTRUN_DB": "/x.db", "POSTRUN_CONFIG": "/c.toml", "POSTRUN_TYPO": "1", "HOME": "/h"}
    assert unreachable_variables(environ) == ["POSTRUN_DB"]
