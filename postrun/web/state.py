"""The running review app's state file: its port, pid and secret, readable by the user only.

``postrun serve`` writes it once it listens and removes it when it stops; ``postrun open``
reads it to mint a login link.
"""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import orjson

from postrun.errors import PostrunError
from postrun.exitcodes import ExitCode
from postrun.paths import ensure_private_dir, write_private_file
from postrun.web.auth import login_token


class NotServing(PostrunError):
    exit_code = ExitCode.NOT_RUNNING


class AlreadyServing(PostrunError):
    exit_code = ExitCode.ALREADY_RUNNING


@dataclass(frozen=True, slots=True)
class ServeState:
    host: str  # 127.0.0.1 or ::1
    port: int
    pid: int
    secret: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def login_url(self, now: float) -> str:
        return f"{self.url}login?token={login_token(self.secret, now)}"


def write_state(path: Path, state: ServeState) -> None:
    try:
        ensure_private_dir(path.parent)
    except OSError as exc:
        raise PostrunError(str(path.parent), f"cannot create the state folder ({exc.strerror or exc})") from None
    write_private_file(
        path, orjson.dumps({"host": state.host, "port": state.port, "pid": state.pid, "secret": state.secret})
    )


def remove_state(path: Path, state: ServeState) -> None:
    """Remove the file if it still describes ``state`` (a newer server may have replaced it)."""
    with contextlib.suppress(OSError, PostrunError):
        if read_state(path) == state:
            path.unlink()


def read_state(path: Path) -> ServeState:
    """The running server's state (NotServing when there is none, or it has stopped)."""
    hint = "no review app running (start it with `postrun serve`)"
    try:
        data = orjson.loads(path.read_bytes())
        state = ServeState(str(data["host"]), int(data["port"]), int(data["pid"]), str(data["secret"]))
    except FileNotFoundError:
        raise NotServing(str(path), hint) from None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise PostrunError(str(path), f"unreadable state file ({exc}); restart `postrun serve`") from None
    try:
        os.kill(state.pid, 0)
    except ProcessLookupError:
        raise NotServing(str(path), hint + f"; pid {state.pid} has exited") from None
    except PermissionError:
        pass  # alive, another user's pid: the port check in the browser will tell
    return state


def check_not_serving(path: Path) -> None:
    """AlreadyServing when the state file names a review app that is alive and listening: a
    second one would take the file over, and the first could no longer be signed in to (nor
    would the file name it again once the second stopped). A file whose pid lives on in another
    program, its port closed, is no server's."""
    try:
        state = read_state(path)
    except PostrunError:
        return
    try:
        with socket.create_connection((state.host, state.port), timeout=1):
            pass
    except OSError:
        return
    raise AlreadyServing(
        str(path),
        f"a review app is already running at {state.url} (pid {state.pid}): `postrun open` signs a browser in;"
        " stop it to serve again",
    )


def review_app_status(path: Path) -> str:
    """``running at <url> (pid N)`` or ``not running``, for ``postrun status``."""
    try:
        state = read_state(path)
    except PostrunError:
        return "not running (`postrun serve`, or `postrun service install --web`)"
    return f"running at {state.url} (pid {state.pid}; `postrun open` signs a browser in)"
