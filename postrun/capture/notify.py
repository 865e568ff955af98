"""systemd's notify protocol in a few lines (``Type=notify``, ``WatchdogSec=``), no dependency.

A datagram of ``KEY=VALUE`` lines to the AF_UNIX socket named by ``NOTIFY_SOCKET``
(a leading ``@`` is Linux's abstract namespace). Without ``NOTIFY_SOCKET`` every call
is a no-op, so the service calls it unconditionally.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping

# Ping at a third of WATCHDOG_USEC: systemd asks for "less than half", and a third
# leaves room for a busy moment.
_WATCHDOG_FRACTION = 1 / 3


def _socket_address(value: str | None) -> str | None:
    if not value:
        return None
    return "\0" + value[1:] if value.startswith("@") else value


def _watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Seconds between WATCHDOG=1 pings, or None when systemd does not ask for them."""
    watchdog_pid = environ.get("WATCHDOG_PID", "").strip()
    if watchdog_pid and watchdog_pid != str(pid):
        return None  # the variables were meant for another process
    try:
        usec = int(environ.get("WATCHDOG_USEC", "").strip())
    except ValueError:
        return None
    return usec / 1e6 * _WATCHDOG_FRACTION if usec > 0 else None


class Notifier:
    """Tells the service manager how the service is doing."""

    def __init__(self, environ: Mapping[str, str], *, pid: int) -> None:
        self.address = _socket_address(environ.get("NOTIFY_SOCKET", "").strip())
        self.watchdog_interval = _watchdog_interval(environ, pid) if self.address else None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *lines: str) -> bool:
        """Send one message; False when not under a service manager or the send failed."""
        if self.address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self.address)
                sock.sendall("\n".join(lines).encode())
        except OSError:
            return False  # the manager went away: nothing to tell, nothing to stop for
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def reloading(self) -> bool:
        # systemd wants the time of the request on CLOCK_MONOTONIC (time.monotonic's clock on Linux).
        return self.send("RELOADING=1", f"MONOTONIC_USEC={time.monotonic_ns() // 1000}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")
