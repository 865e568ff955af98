"""The daily backup, as an option of ``service install``: a systemd user timer, or a launchd
agent with ``StartCalendarInterval``, that runs ``postrun backup --keep 7``.

The backup is a separate job from capture (it does not need capture to run, and capture
does not wait for it); the backup API copies the store consistently while capture writes.
"""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from pathlib import Path

from postrun.paths import Paths
from postrun.units.commands import Step
from postrun.units.render import NICE, Platform, ServiceFile, exec_line

KEEP = 7
BACKUP_UNIT = "postrun-backup.service"
BACKUP_TIMER = "postrun-backup.timer"
BACKUP_LABEL = "dev.postrun.backup"
# Early morning, when a laptop may well be asleep: the timer then runs at the next start
# (Persistent=), launchd at the next wake.
HOUR, MINUTE = 3, 17

_SERVICE_TEMPLATE = """\
# Postrun's daily backup of its store (`postrun backup --keep {keep}`), started by {timer}.
# The backups are in <store folder>/backups; `postrun restore FILE` puts one back.

[Unit]
Description=Postrun: back up the store, keeping the newest {keep} daily backups

[Service]
Type=oneshot
ExecStart={exec_start}
UMask=0077
Nice={nice}
IOSchedulingClass=idle
NoNewPrivileges=yes
"""

_TIMER_TEMPLATE = """\
# Runs {unit} once a day; a day missed while the machine was off is made up at the next start.

[Unit]
Description=Postrun: daily backup of the store

[Timer]
OnCalendar=*-*-* {hour:02d}:{minute:02d}:00
Persistent=true
RandomizedDelaySec=600

[Install]
WantedBy=timers.target
"""


def backup_command(capture: Sequence[str]) -> tuple[str, ...]:
    """The backup's command line from capture's (the same program, ``--config`` and ``--db``)."""
    assert capture[-1] == "capture"
    return (*capture[:-1], "backup", "--keep", str(KEEP))


def backup_files(platform: Platform, paths: Paths, capture: Sequence[str]) -> tuple[ServiceFile, ...]:
    command = backup_command(capture)
    if platform == "linux":
        service = _SERVICE_TEMPLATE.format(keep=KEEP, timer=BACKUP_TIMER, exec_start=exec_line(command), nice=NICE)
        timer = _TIMER_TEMPLATE.format(unit=BACKUP_UNIT, hour=HOUR, minute=MINUTE)
        return (
            ServiceFile(platform, paths.systemd_user_dir / BACKUP_UNIT, service, command),
            ServiceFile(platform, paths.systemd_user_dir / BACKUP_TIMER, timer, command),
        )
    agent = {
        "Label": BACKUP_LABEL,
        "ProgramArguments": list(command),
        "StartCalendarInterval": {"Hour": HOUR, "Minute": MINUTE},
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": NICE,
        "StandardOutPath": str(paths.log_dir / "backup.log"),
        "StandardErrorPath": str(paths.log_dir / "backup.log"),
    }
    content = plistlib.dumps(agent, sort_keys=False).decode()
    return (ServiceFile(platform, backup_paths(platform, paths)[0], content, command),)


def backup_paths(platform: Platform, paths: Paths) -> tuple[Path, ...]:
    if platform == "linux":
        return (paths.systemd_user_dir / BACKUP_UNIT, paths.systemd_user_dir / BACKUP_TIMER)
    return (paths.launch_agents_dir / f"{BACKUP_LABEL}.plist",)


def backup_activation(platform: Platform, paths: Paths, *, uid: int) -> tuple[Step, ...]:
    if platform == "linux":
        return (Step(("systemctl", "--user", "enable", "--now", BACKUP_TIMER)),)
    plist = str(backup_paths(platform, paths)[0])
    return (
        Step(("launchctl", "bootout", f"gui/{uid}/{BACKUP_LABEL}"), advisory=True),
        Step(("launchctl", "bootstrap", f"gui/{uid}", plist)),
    )


def backup_deactivation(platform: Platform, *, uid: int) -> tuple[Step, ...]:
    if platform == "linux":
        return (Step(("systemctl", "--user", "disable", "--now", BACKUP_TIMER), advisory=True),)
    return (Step(("launchctl", "bootout", f"gui/{uid}/{BACKUP_LABEL}"), advisory=True),)
