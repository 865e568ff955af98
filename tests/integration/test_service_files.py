"""The rendered systemd unit against systemd's own checker, and the LaunchAgent against plistlib."""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from postrun.units import LABEL, installed_command, render_plist, render_unit
from tests.conftest import REPO

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")


def fake_program(folder: Path, name: str = "postrun") -> Path:
    """An executable for ExecStart= to point at: `verify` fails when the program is missing."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return program


def analyze(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """systemd-analyze --user without a user manager: HOME and a private XDG_RUNTIME_DIR in tmp."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environ = {key: value for key, value in os.environ.items() if not key.startswith("XDG_")}
    environ.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), XDG_CONFIG_HOME=str(home / ".config"))
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run(
        [SYSTEMD_ANALYZE, "--user", *args], env=environ, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )


def write_unit(tmp_path: Path, command: list[str]) -> Path:
    unit = tmp_path / "home" / ".config" / "systemd" / "user" / "postrun.service"
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(render_unit(command))
    return unit


def exposure(output: str) -> float:
    match = re.search(r"Overall exposure level for postrun\.service: ([0-9.]+)", output)
    assert match, output
    return float(match.group(1))


def test_the_repository_files_are_the_renderings() -> None:
    assert (REPO / "systemd" / "postrun.service").read_text() == render_unit(["/usr/bin/postrun", "capture"])
    template = render_plist(
        ["/usr/local/bin/postrun", "capture"], log_file=Path("/Users/USERNAME/Library/Logs/postrun/capture.log")
    )
    assert (REPO / "launchd" / f"{LABEL}.plist").read_text() == template


def test_the_distribution_unit_says_what_the_issue_asks() -> None:
    lines = (REPO / "systemd" / "postrun.service").read_text().splitlines()
    for expected in [
        "Type=notify",
        "ExecStart=/usr/bin/postrun capture",
        "Restart=on-failure",
        "RestartPreventExitStatus=75 78",
        "NoNewPrivileges=yes",
        "LockPersonality=yes",
        "RestrictRealtime=yes",
        "SystemCallArchitectures=native",
        "UMask=0077",
        "IOSchedulingClass=idle",
        "Environment=PYTHONUNBUFFERED=1",
        "WantedBy=default.target",
    ]:
        assert expected in lines
    keys = {line.split("=", 1)[0] for line in lines if "=" in line and not line.startswith("#")}
    assert {"WatchdogSec", "TimeoutStopSec", "Nice", "StartLimitIntervalSec", "StartLimitBurst"} <= keys
    unit_section = lines[lines.index("[Unit]") : lines.index("[Service]")]
    assert any(line.startswith("StartLimitBurst=") for line in unit_section)  # [Service] would ignore it


@needs_systemd_analyze
def test_rendered_unit_passes_systemd_verify_without_a_word(tmp_path: Path) -> None:
    program = fake_program(tmp_path / "venv" / "bin")
    unit = write_unit(tmp_path, [str(program), "capture"])
    result = analyze(tmp_path, "verify", str(unit))
    assert (result.returncode, result.stderr) == (0, "")


@needs_systemd_analyze
def test_verify_would_catch_a_broken_unit(tmp_path: Path) -> None:
    """The empty-stderr rule matters: systemd-analyze returns 0 on unknown keys."""
    program = fake_program(tmp_path / "bin")
    unit = write_unit(tmp_path, [str(program), "capture"])
    unit.write_text(unit.read_text().replace("Type=notify", "Type=notify\nBogusKey=1"))
    result = analyze(tmp_path, "verify", str(unit))
    assert "BogusKey" in result.stderr


@needs_systemd_analyze
def test_paths_with_blanks_percent_and_dollar_survive_systemd_parsing(tmp_path: Path) -> None:
    program = fake_program(tmp_path / "my tools 100%" / "$HOME")
    command = [str(program), "--config", str(tmp_path / 'a $b 50% back\\slash "quoted" it\'s.toml'), "capture"]
    unit = write_unit(tmp_path, command)
    result = analyze(tmp_path, "verify", str(unit))
    assert (result.returncode, result.stderr) == (0, "")
    assert installed_command(unit) == tuple(command)


@needs_systemd_analyze
def test_hardening_drop_in_verifies_and_lowers_the_exposure(tmp_path: Path) -> None:
    program = fake_program(tmp_path / "bin")
    unit = write_unit(tmp_path, [str(program), "capture"])
    plain = analyze(tmp_path, "security", "--offline=true", str(unit))
    assert plain.returncode == 0, plain.stderr
    drop_in = unit.parent / "postrun.service.d" / "hardening.conf"
    drop_in.parent.mkdir()
    shutil.copy(REPO / "systemd" / "hardening.conf", drop_in)
    verified = analyze(tmp_path, "verify", str(unit))
    assert (verified.returncode, verified.stderr) == (0, "")
    hardened = analyze(tmp_path, "security", "--offline=true", str(unit))
    assert hardened.returncode == 0, hardened.stderr
    # The default unit keeps the user-mode options only; the drop-in adds the mount namespace.
    assert exposure(hardened.stdout) < exposure(plain.stdout) - 2
    assert exposure(plain.stdout) < 9.0  # "EXPOSED" starts above the options the unit sets


@needs_systemd_analyze
def test_hardening_drop_in_lets_capture_reach_the_team_mirror(tmp_path: Path) -> None:
    """Capture connects to the team mirror's PostgreSQL over TCP (README): the sandbox must allow it,
    as systemd itself reads the drop-in, while still refusing packet and netlink sockets."""
    program = fake_program(tmp_path / "bin")
    unit = write_unit(tmp_path, [str(program), "capture"])
    drop_in = unit.parent / "postrun.service.d" / "hardening.conf"
    drop_in.parent.mkdir()
    shutil.copy(REPO / "systemd" / "hardening.conf", drop_in)
    hardened = analyze(tmp_path, "security", "--offline=true", str(unit))
    assert hardened.returncode == 0, hardened.stderr
    families = {
        line.split()[1]: line.split()[0] for line in hardened.stdout.splitlines() if "RestrictAddressFamilies" in line
    }
    assert families["RestrictAddressFamilies=~AF_(INET|INET6)"] == "✗", hardened.stdout  # allowed
    assert families["RestrictAddressFamilies=~AF_PACKET"] == "✓"
    assert families["RestrictAddressFamilies=~AF_NETLINK"] == "✓"


def test_plist_round_trips_with_the_keys_and_types_launchd_needs(tmp_path: Path) -> None:
    log_file = tmp_path / "Library" / "Logs" / "postrun" / "capture.log"
    command = ["/opt/homebrew/bin/postrun", "capture"]
    text = render_plist(command, log_file=log_file)
    agent = plistlib.loads(text.encode())
    assert plistlib.dumps(agent, sort_keys=False).decode() == text

    assert agent["Label"] == LABEL
    assert agent["ProgramArguments"] == command
    assert all(isinstance(word, str) for word in agent["ProgramArguments"])
    assert Path(agent["ProgramArguments"][0]).is_absolute()
    for key in ("RunAtLoad", "LowPriorityIO"):
        assert agent[key] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert type(agent["KeepAlive"]["SuccessfulExit"]) is bool
    for key in ("ThrottleInterval", "ExitTimeOut", "Nice"):
        assert type(agent[key]) is int, key
    assert agent["ThrottleInterval"] >= 10  # launchd's default; lower would spin on exit 75/78
    assert agent["ProcessType"] == "Background"
    for key in ("StandardOutPath", "StandardErrorPath"):
        assert agent[key] == str(log_file)
        assert Path(agent[key]).is_absolute() and "~" not in agent[key] and "$" not in agent[key]
    assert agent["EnvironmentVariables"] == {"PYTHONUNBUFFERED": "1"}
    # Booleans are real plist booleans, not strings launchd would misread.
    assert "<true/>" in text and "<false/>" in text


def test_repository_plist_template_is_a_valid_agent() -> None:
    agent = plistlib.loads((REPO / "launchd" / f"{LABEL}.plist").read_bytes())
    assert agent["Label"] == LABEL
    assert agent["ProgramArguments"][-1] == "capture"
    assert all(Path(agent[key]).is_absolute() for key in ("StandardOutPath", "StandardErrorPath"))
