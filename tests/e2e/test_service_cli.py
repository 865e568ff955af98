"""The real `postrun` executable: `service install|uninstall|status` and `doctor`.

CI has no user service manager: fake `systemctl` and `launchctl` scripts first on PATH
record their argv (one line per call) and answer as the test asks.
"""

from __future__ import annotations

import fcntl
import os
import plistlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, postrun_command, run_postrun

FAKE_TOOL = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
if [ -f "{no_bus}" ]; then
    echo "Failed to connect to bus: No medium found" >&2
    exit 1
fi
exit 0
"""


class FakeManager:
    """Fake systemctl and launchctl; ``calls()`` is what they were asked, in order."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.log = folder / "calls.log"
        self.no_bus_flag = folder / "no-bus"
        for name in ("systemctl", "launchctl"):
            tool = folder / name
            tool.write_text(FAKE_TOOL.format(log=self.log, no_bus=self.no_bus_flag))
            tool.chmod(0o755)
        self.folder = folder

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def without_user_manager(self) -> None:
        self.no_bus_flag.touch()


@pytest.fixture
def manager(tmp_path: Path, env: dict[str, str]) -> FakeManager:
    fake = FakeManager(tmp_path / "fake-bin")
    env["PATH"] = f"{fake.folder}{os.pathsep}{env['PATH']}"
    return fake


def unit_path(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "postrun.service"


def plist_path(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / "Library" / "LaunchAgents" / "dev.postrun.capture.plist"


def exec_start(unit: Path) -> str:
    return next(line for line in unit.read_text().splitlines() if line.startswith("ExecStart="))


EXPECTED_PROGRAM = " ".join(postrun_command())  # the test executables' paths hold no blanks


def test_install_writes_the_unit_for_this_postrun_and_prints_the_next_commands(
    env: dict[str, str], manager: FakeManager, tmp_path: Path
) -> None:
    result = run_postrun("service", "install", "--platform", "linux", env=env)
    assert result.returncode == 0, result.stderr
    unit = unit_path(env)
    assert exec_start(unit) == f"ExecStart={EXPECTED_PROGRAM} capture"
    assert "Type=notify" in unit.read_text().splitlines()
    lines = result.stdout.splitlines()
    assert f"wrote {unit}" in lines
    assert "next: systemctl --user daemon-reload && systemctl --user enable --now postrun" in lines
    assert "loginctl enable-linger $USER" in result.stdout
    assert "POSTRUN_* variables from shell rc files do not reach the service" in result.stdout
    # POSTRUN_AGENTS and POSTRUN_DB are set in this test's environment: named as lost to the service.
    assert "warning: POSTRUN_AGENTS, POSTRUN_DB set in this shell will not reach the service" in result.stderr
    assert manager.calls() == []  # without --now nothing is run

    if shutil.which("systemd-analyze"):
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700)
        verify = subprocess.run(
            ["systemd-analyze", "--user", "verify", str(unit)],
            env={**env, "XDG_RUNTIME_DIR": str(runtime)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (verify.returncode, verify.stderr) == (0, "")


def test_dry_run_prints_the_file_and_writes_nothing(env: dict[str, str], manager: FakeManager) -> None:
    result = run_postrun("service", "install", "--platform", "linux", "--dry-run", "--now", env=env)
    assert result.returncode == 0, result.stderr
    assert f"ExecStart={EXPECTED_PROGRAM} capture" in result.stdout.splitlines()
    assert result.stdout.startswith("# Postrun capture")
    assert not Path(env["XDG_CONFIG_HOME"], "systemd").exists()
    assert manager.calls() == []
    macos = run_postrun("service", "install", "--platform", "macos", "--dry-run", env=env)
    assert plistlib.loads(macos.stdout.encode())["ProgramArguments"] == [*postrun_command(), "capture"]
    assert not plist_path(env).parent.exists()


def test_install_now_runs_exactly_the_printed_commands(env: dict[str, str], manager: FakeManager) -> None:
    first = run_postrun("service", "install", "--now", "--platform", "linux", env=env)
    assert first.returncode == 0, first.stderr
    assert manager.calls() == ["--user daemon-reload", "--user enable --now postrun"]
    assert "$ systemctl --user enable --now postrun" in first.stdout.splitlines()

    # Reinstalled with another configuration file: the running capture must pick it up.
    config = Path(env["HOME"]) / "elsewhere.toml"
    config.write_text("poll_seconds = 5\n")
    second = run_postrun("--config", str(config), "service", "install", "--now", "--platform", "linux", env=env)
    assert second.returncode == 0, second.stderr
    assert exec_start(unit_path(env)) == f"ExecStart={EXPECTED_PROGRAM} --config {config} capture"
    assert manager.calls()[2:] == ["--user daemon-reload", "--user enable --now postrun", "--user try-restart postrun"]


def test_install_now_without_a_user_manager_keeps_the_file_and_says_why(
    env: dict[str, str], manager: FakeManager
) -> None:
    manager.without_user_manager()
    result = run_postrun("service", "install", "--now", "--platform", "linux", env=env)
    assert result.returncode == 1
    assert unit_path(env).exists()
    assert result.stderr.splitlines()[-1].startswith(
        "error: systemctl --user daemon-reload: Failed to connect to bus: No medium found: no user service manager"
    )
    # A container has no user manager to log in to or linger: the way that records there is named.
    assert result.stderr.splitlines()[-1].endswith(
        "where there is none, `postrun capture --daemon` records without it)"
    )
    assert "Traceback" not in result.stderr


def test_uninstall_removes_the_unit_and_its_enable_link(env: dict[str, str], manager: FakeManager) -> None:
    assert run_postrun("service", "install", "--platform", "linux", env=env).returncode == 0
    unit = unit_path(env)
    wants = unit.parent / "default.target.wants" / "postrun.service"
    wants.parent.mkdir()
    wants.symlink_to(unit)  # what `systemctl --user enable` leaves behind
    result = run_postrun("service", "uninstall", "--now", "--platform", "linux", env=env)
    assert result.returncode == 0, result.stderr
    assert not unit.exists() and not wants.is_symlink()
    assert manager.calls() == ["--user disable --now postrun", "--user daemon-reload"]
    again = run_postrun("service", "uninstall", "--platform", "linux", env=env)
    assert (again.returncode, again.stdout) == (0, f"not installed: {unit}\n")


def test_macos_install_and_uninstall_with_launchctl(env: dict[str, str], manager: FakeManager) -> None:
    uid = os.getuid()
    installed = run_postrun("service", "install", "--platform", "macos", "--now", env=env)
    assert installed.returncode == 0, installed.stderr
    plist = plist_path(env)
    agent = plistlib.loads(plist.read_bytes())
    assert agent["ProgramArguments"] == [*postrun_command(), "capture"]
    log = Path(agent["StandardErrorPath"])
    assert log.is_absolute() and log.parent.is_dir() and log.is_relative_to(env["HOME"])
    assert manager.calls() == [f"bootstrap gui/{uid} {plist}"]
    printed = run_postrun("service", "install", "--platform", "macos", env=env)
    assert f"(before macOS 10.11: launchctl load {plist})" in printed.stdout

    removed = run_postrun("service", "uninstall", "--platform", "macos", "--now", env=env)
    assert removed.returncode == 0, removed.stderr
    assert not plist.exists()
    assert manager.calls()[-1] == f"bootout gui/{uid}/dev.postrun.capture"


def test_status_without_a_user_manager_says_unknown(env: dict[str, str], manager: FakeManager) -> None:
    manager.without_user_manager()
    before = run_postrun("service", "status", "--platform", "linux", env=env)
    assert before.returncode == 0, before.stderr
    assert "enabled: unknown (no user manager)" in before.stdout.splitlines()
    assert "running: unknown (no user manager)" in before.stdout.splitlines()
    run_postrun("service", "install", "--platform", "linux", env=env)
    after = run_postrun("service", "status", "--platform", "linux", env=env)
    assert f"installed: yes ({unit_path(env)})" in after.stdout.splitlines()
    assert f"runs: {EXPECTED_PROGRAM} capture" in after.stdout.splitlines()


def healthy_setup(env: dict[str, str], tmp_path: Path) -> Path:
    """A Cline data dir and a Claude Code projects folder copied from fixtures, ingested into the
    store; returns Cline's sessions root."""
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", tmp_path / "cline")
    root = tmp_path / "cline" / "sessions"
    env["POSTRUN_CLINE_DIR"] = str(root)
    ingested = run_postrun("ingest", "--agent", "cline", str(root), env=env)
    assert ingested.returncode == 0, ingested.stderr
    shutil.copytree(FIXTURES / "claude-code-real" / "a_read_edit_write" / "claude", tmp_path / "claude")
    env["POSTRUN_CLAUDE_DIR"] = str(tmp_path / "claude" / "projects")
    env["POSTRUN_AGENTS"] = "cline,claude-code"
    ingested = run_postrun("ingest", "--agent", "claude-code", env["POSTRUN_CLAUDE_DIR"], env=env)
    assert ingested.returncode == 0, ingested.stderr
    return root


def test_doctor_on_a_healthy_setup(env: dict[str, str], manager: FakeManager, tmp_path: Path) -> None:
    manager.without_user_manager()
    root = healthy_setup(env, tmp_path)
    result = run_postrun("doctor", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    checks = [line for line in lines if not line.startswith(" ")]
    assert [line.split()[1].rstrip(":") for line in checks] == [
        "python",
        "config",
        "store",
        "exclude",
        "sources",
        "sessions",
        "approvals",
        "claude-code",  # claude-code sessions
        "capture",
        "service",
        "web",  # web service
        "inotify",
    ]
    assert all(line.split()[0] in {"ok", "warn"} for line in checks)
    assert "ok    web service: not installed (optional: `postrun service install --web --now`)" in lines
    assert f"ok    sessions: 1 session in {root}" in lines
    assert lines[lines.index("warn  capture: not running") + 1].startswith("      hint: ")


def test_doctor_on_a_capture_whose_status_is_empty_says_pid_unknown(
    env: dict[str, str], manager: FakeManager, tmp_path: Path
) -> None:
    # A capture on a full disk holds its lock with the status emptied (capture.lock): `doctor`
    # says what `status` says of it, never a "pid 0".
    healthy_setup(env, tmp_path)
    lock = Path(env["POSTRUN_DB"] + ".capture.lock")
    with lock.open("wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = run_postrun("doctor", env=env)
        status = run_postrun("status", env=env)
    assert status.stdout.splitlines()[0] == "capture: running (pid unknown, since unknown)"
    assert "ok    capture: running (pid unknown, since unknown, 0 sessions watched)" in result.stdout.splitlines()


def test_doctor_fails_on_a_corrupt_store(env: dict[str, str], manager: FakeManager, tmp_path: Path) -> None:
    healthy_setup(env, tmp_path)
    Path(env["POSTRUN_DB"]).write_bytes(b"\0garbage" * 512)
    result = run_postrun("doctor", env=env)
    assert result.returncode == 1
    assert f"fail  store: {env['POSTRUN_DB']}: cannot use the store (the file is not a SQLite database)" in (
        result.stdout.splitlines()
    )


def test_doctor_fails_without_a_sessions_root(env: dict[str, str], manager: FakeManager, tmp_path: Path) -> None:
    env["POSTRUN_CLINE_DIR"] = str(tmp_path / "no-cline-here")
    result = run_postrun("doctor", env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    failing = [line for line in lines if line.startswith("fail")]
    assert failing == [f"fail  sessions: {tmp_path / 'no-cline-here'}: no such folder"]
    assert lines[lines.index(failing[0]) + 1].startswith("      hint: has Cline run on this machine?")


def test_install_web_adds_the_review_app_unit_and_status_and_doctor_report_it(
    env: dict[str, str], manager: FakeManager, tmp_path: Path
) -> None:
    result = run_postrun("service", "install", "--web", "--now", "--platform", "linux", env=env)
    assert result.returncode == 0, result.stderr
    web_unit = unit_path(env).with_name("postrun-web.service")
    assert exec_start(web_unit) == f"ExecStart={EXPECTED_PROGRAM} serve"
    assert exec_start(unit_path(env)) == f"ExecStart={EXPECTED_PROGRAM} capture"
    assert manager.calls() == [
        "--user daemon-reload",
        "--user enable --now postrun",
        "--user daemon-reload",
        "--user enable --now postrun-web",
    ]
    assert f"wrote {web_unit}" in result.stdout.splitlines()
    status = run_postrun("service", "status", "--platform", "linux", env=env)
    assert any(line.startswith(f"review app: installed ({web_unit}); enabled: ") for line in status.stdout.splitlines())
    healthy_setup(env, tmp_path)
    doctor = run_postrun("doctor", env=env)
    assert any(line.startswith(f"ok    web service: {web_unit}; enabled: ") for line in doctor.stdout.splitlines())
    assert "review app: not running" in run_postrun("status", env=env).stdout

    if shutil.which("systemd-analyze"):
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700)
        verify = subprocess.run(
            ["systemd-analyze", "--user", "verify", str(web_unit)],
            env={**env, "XDG_RUNTIME_DIR": str(runtime)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (verify.returncode, verify.stderr) == (0, "")

    removed = run_postrun("service", "uninstall", "--now", "--platform", "linux", env=env)
    assert removed.returncode == 0, removed.stderr
    assert not web_unit.exists() and not unit_path(env).exists()
    assert "--user disable --now postrun-web" in manager.calls()


def test_install_web_on_macos_writes_a_second_agent(env: dict[str, str], manager: FakeManager) -> None:
    result = run_postrun("service", "install", "--web", "--platform", "macos", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    agents = [plistlib.loads(part.encode() + b"</plist>\n") for part in result.stdout.split("</plist>\n") if part]
    assert [agent["Label"] for agent in agents] == ["dev.postrun.capture", "dev.postrun.web"]
    assert agents[1]["ProgramArguments"] == [*postrun_command(), "serve"]
    assert agents[1]["StandardErrorPath"].endswith("serve.log")
