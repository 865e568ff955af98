"""`service install --daily-backup`: the systemd timer or launchd calendar agent, written,
verified by systemd itself where it is installed, started and removed again."""

from __future__ import annotations

import plistlib
import subprocess
from pathlib import Path

import pytest

from postrun.units import install_service, uninstall_files
from postrun.units.backup import BACKUP_TIMER, backup_files
from tests.integration.test_service_files import SYSTEMD_ANALYZE, analyze, fake_program
from tests.unit.test_service_files import Recorder, make_paths

CAPTURE = ("/opt/postrun/bin/postrun", "--db", "/data/p.db", "capture")


def test_the_timer_runs_the_same_postrun_with_the_same_store_daily(tmp_path: Path) -> None:
    service, timer = backup_files("linux", make_paths(tmp_path), CAPTURE)
    assert service.path.name == "postrun-backup.service" and timer.path.name == BACKUP_TIMER
    assert "ExecStart=/opt/postrun/bin/postrun --db /data/p.db backup --keep 7" in service.content.splitlines()
    assert "Type=oneshot" in service.content.splitlines()
    timer_lines = timer.content.splitlines()
    assert {"Persistent=true", "WantedBy=timers.target"} <= set(timer_lines)
    assert any(line.startswith("OnCalendar=*-*-* 03:17") for line in timer_lines)


def test_the_launchd_agent_runs_at_a_calendar_time(tmp_path: Path) -> None:
    (agent,) = backup_files("macos", make_paths(tmp_path), CAPTURE)
    content = plistlib.loads(agent.content.encode())
    assert content["ProgramArguments"] == ["/opt/postrun/bin/postrun", "--db", "/data/p.db", "backup", "--keep", "7"]
    assert content["StartCalendarInterval"] == {"Hour": 3, "Minute": 17}
    assert agent.path.name == "dev.postrun.backup.plist"


@pytest.mark.parametrize("platform", ["linux", "macos"])
def test_install_with_daily_backup_writes_and_starts_it_and_uninstall_removes_it(tmp_path: Path, platform: str) -> None:
    paths = make_paths(tmp_path)
    runner = Recorder()
    written: list[Path] = []
    install_service(
        platform,  # type: ignore[arg-type]
        paths,
        CAPTURE,
        now=True,
        uid=501,
        environ={},
        runner=runner,
        on_run=lambda step: None,
        on_written=lambda installed: written.append(installed.file.path),
        daily_backup=True,
    )
    expected = [f.path for f in backup_files(platform, paths, CAPTURE)]  # type: ignore[arg-type]
    assert written[1:] == expected and all(path.exists() for path in expected)
    if platform == "linux":
        assert runner.calls[-1] == ("systemctl", "--user", "enable", "--now", BACKUP_TIMER)
        wants = paths.systemd_user_dir / "timers.target.wants" / BACKUP_TIMER
        wants.parent.mkdir()
        wants.symlink_to(expected[1])  # what `systemctl --user enable` makes
    else:
        assert runner.calls[-1] == ("launchctl", "bootstrap", "gui/501", str(expected[0]))
    removed = uninstall_files(platform, paths)  # type: ignore[arg-type]
    assert set(expected) <= set(removed) and not any(path.exists() for path in expected)
    assert not any(paths.systemd_user_dir.glob("*.wants/*"))


def test_without_the_option_no_backup_is_installed(tmp_path: Path) -> None:
    paths = make_paths(tmp_path)
    install_service("linux", paths, CAPTURE, now=False, uid=0, environ={}, runner=Recorder(), on_run=lambda step: None)
    assert sorted(p.name for p in paths.systemd_user_dir.iterdir()) == ["postrun.service"]


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_systemd_verifies_the_backup_units_without_a_word(tmp_path: Path) -> None:
    program = fake_program(tmp_path / "venv" / "bin")
    folder = tmp_path / "home" / ".config" / "systemd" / "user"
    folder.mkdir(parents=True)
    for file in backup_files("linux", make_paths(tmp_path), (str(program), "capture")):
        (folder / file.path.name).write_text(file.content)
    result: subprocess.CompletedProcess[str] = analyze(tmp_path, "verify", str(folder / BACKUP_TIMER))
    assert (result.returncode, result.stderr) == (0, "")
