"""The review app (``postrun serve``) as a second user service, next to capture's.

``postrun service install --web`` writes it; it starts the same Postrun as the capture unit
with the same options, and listens on 127.0.0.1 only (``postrun open`` signs a browser in).
"""

from __future__ import annotations

from collections.abc import Sequence

from postrun.paths import Paths
from postrun.units.render import (
    NICE,
    RESTART_SECONDS,
    STOP_TIMEOUT_SECONDS,
    Platform,
    ServiceFile,
    UnitNames,
    exec_line,
    render_plist,
    service_path,
)

WEB = UnitNames("postrun-web.service", "postrun-web", "dev.postrun.web", "serve.log")

_WEB_UNIT_TEMPLATE = """\
# The Postrun review app as a per-user service: `systemctl --user enable --now postrun-web`.
# It listens on 127.0.0.1 only; `postrun open` opens it in the browser, signed in.
# Logs: `journalctl --user -u postrun-web`.

[Unit]
Description=Postrun review app: a local web page over the store (127.0.0.1 only)
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=exec
ExecStart={exec_start}
Restart=on-failure
RestartSec={restart}
TimeoutStopSec={stop_timeout}
Environment=PYTHONUNBUFFERED=1
UMask=0077
Nice={nice}
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictNamespaces=yes
RestrictSUIDSGID=yes
SystemCallArchitectures=native

[Install]
WantedBy=default.target
"""


def render_web_unit(command: Sequence[str]) -> str:
    """The systemd user unit that runs ``command`` (``[...program, "serve"]``)."""
    return _WEB_UNIT_TEMPLATE.format(
        exec_start=exec_line(command), restart=RESTART_SECONDS, stop_timeout=STOP_TIMEOUT_SECONDS, nice=NICE
    )


def web_service_file(platform: Platform, paths: Paths, command: Sequence[str]) -> ServiceFile:
    if platform == "linux":
        content = render_web_unit(command)
    else:
        content = render_plist(command, log_file=paths.log_dir / WEB.log_name, label=WEB.label)
    return ServiceFile(
        platform=platform, path=service_path(platform, paths, WEB), content=content, command=tuple(command)
    )
