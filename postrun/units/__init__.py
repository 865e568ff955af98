"""Run ``postrun capture`` as a per-user service: the systemd user unit and the launchd agent.

``render`` makes the files (and reads an installed one back), ``web`` the review app's, ``install`` writes or removes
them and has the manager start or stop the service, ``status`` asks the manager what runs;
every external command (``systemctl``, ``launchctl``) goes through ``commands``' one
injectable ``Runner``.
"""

from __future__ import annotations

from postrun.units.backup import backup_files
from postrun.units.commands import NO_USER_MANAGER, CommandResult, Runner, Step, run_command, run_steps, shell_line
from postrun.units.install import (
    Installed,
    InstallReport,
    UninstallReport,
    activation_steps,
    install_file,
    install_service,
    uninstall_files,
    uninstall_service,
)
from postrun.units.render import (
    CAPTURE,
    LABEL,
    Platform,
    ServiceFile,
    UnitNames,
    capture_command,
    installed_command,
    parse_platform,
    program_command,
    render_plist,
    render_unit,
    service_file,
    service_path,
    unreachable_variables,
)
from postrun.units.status import ServiceStatus, State, service_status
from postrun.units.web import WEB, web_service_file

__all__ = [
    "CAPTURE",
    "LABEL",
    "NO_USER_MANAGER",
    "WEB",
    "CommandResult",
    "InstallReport",
    "Installed",
    "Platform",
    "Runner",
    "ServiceFile",
    "ServiceStatus",
    "State",
    "Step",
    "UninstallReport",
    "UnitNames",
    "activation_steps",
    "backup_files",
    "capture_command",
    "install_file",
    "install_service",
    "installed_command",
    "parse_platform",
    "program_command",
    "render_plist",
    "render_unit",
    "run_command",
    "run_steps",
    "service_file",
    "service_path",
    "service_status",
    "shell_line",
    "uninstall_files",
    "uninstall_service",
    "unreachable_variables",
    "web_service_file",
]
