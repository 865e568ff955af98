"""Running the review app: bind loopback only, record the state file, serve until SIGTERM/Ctrl-C."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import secrets
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from postrun.errors import PostrunError, UsageError
from postrun.startsignals import take
from postrun.web.address import DEFAULT_PORT
from postrun.web.app import WebConfig, create_app
from postrun.web.launch import remove_redirects
from postrun.web.state import ServeState, check_not_serving, remove_state, write_state

_SHUTDOWN_SECONDS = 2  # live streams end at once; slow requests get this long


# Every address ``ipaddress`` calls loopback is taken: README's words for them.
LOOPBACK = "a loopback address (127.0.0.1, any other 127.x.y.z, or ::1)"


def check_loopback(host: str) -> str:
    """``host`` when it is a loopback address; the app must never listen on a network."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise UsageError("--host", f"{host!r} is not an IP address; the review app binds {LOOPBACK}") from None
    if not address.is_loopback:
        raise UsageError("--host", f"refusing to listen on {host}: the review app binds only {LOOPBACK}")
    return str(address)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: any free port); one-line error when taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PostrunError(f"{host}:{port}", "port already in use (choose another with --port)") from None
        raise PostrunError(f"{host}:{port}", f"cannot listen ({exc.strerror or exc})") from None
    sock.set_inheritable(True)
    return sock


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Server(uvicorn.Server):
    """uvicorn, minus its own signal handling: ``serve`` installs ``stop`` before the state file
    is written and keeps it until the server is gone, so a stop signal at any moment of the
    start is seen (uvicorn's handler, installed later, left a window where the signal set only
    the app's flag and the server ran on), and Postrun exits 0 after a clean stop instead of
    uvicorn re-raising the signal."""

    def __init__(self, config: uvicorn.Config, web: WebConfig) -> None:
        super().__init__(config)
        self.web = web

    def stop(self, signum: int, frame: FrameType | None) -> None:
        self.web.stopping = True
        self.should_exit = True

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(frozen=True, slots=True)
class Listening:
    url: str
    state: ServeState


def serve(
    db: Path,
    state_file: Path,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    on_listening: Callable[[Listening], None] = lambda listening: None,
    home: Path | None = None,
) -> None:
    """Serve the review app over ``db`` until SIGTERM or SIGINT (``home``: the user's home
    folder, which the Markdown download shows as ``~``)."""
    host = check_loopback(host)
    check_not_serving(state_file)
    sock = bind(host, port)
    port = sock.getsockname()[1]
    state = ServeState(host=host, port=port, pid=os.getpid(), secret=secrets.token_urlsafe(32))
    web = WebConfig(db=db, port=port, secret=state.secret, host=host, home=home)
    config = uvicorn.Config(
        create_app(web),
        log_level=logging.WARNING,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=_SHUTDOWN_SECONDS,
        server_header=False,
        proxy_headers=False,
    )

    server = _Server(config, web)
    previous = {sig: signal.signal(sig, server.stop) for sig in _STOP_SIGNALS}
    for number in take():  # asked for while the command started (postrun.startsignals): stop now
        server.stop(number, None)
    try:
        write_state(state_file, state)
        on_listening(Listening(state.url, state))
        server.run(sockets=[sock])
    finally:
        sock.close()
        remove_state(state_file, state)
        remove_redirects(state_file.parent)  # links to this server: none can be used now
        for sig, handler in previous.items():
            signal.signal(sig, handler)
