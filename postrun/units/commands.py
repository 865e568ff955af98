"""The service manager's commands (``systemctl``, ``launchctl``): run through one injectable ``Runner``."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from postrun.errors import PostrunError

# systemctl may wait for READY=1 (Type=notify), which can take a while on a first start.
_COMMAND_TIMEOUT_SECONDS = 360
_NO_MANAGER_MARKERS = ("Failed to connect to bus", "Failed to connect to user scope bus")
NO_USER_MANAGER = "no user manager"


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def no_user_manager(self) -> bool:
        return any(marker in self.stderr for marker in _NO_MANAGER_MARKERS)

    @property
    def reason(self) -> str:
        """The command's own first line of complaint."""
        for text in (self.stderr, self.stdout):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()
        return f"exit status {self.returncode}"


Runner = Callable[[Sequence[str]], CommandResult]


def run_command(argv: Sequence[str]) -> CommandResult:
    """Run ``argv`` (looked up on PATH) and collect its output; never raises for its failure."""
    try:
        completed = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=_COMMAND_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        return CommandResult(tuple(argv), 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(argv), 124, "", f"{argv[0]}: no answer after {_COMMAND_TIMEOUT_SECONDS} s")
    return CommandResult(tuple(argv), completed.returncode, completed.stdout, completed.stderr)


@dataclass(frozen=True)
class Step:
    """One command of an activation; ``advisory`` ones may fail (``launchctl bootout`` of an
    agent that is not loaded)."""

    argv: tuple[str, ...]
    advisory: bool = False


def shell_line(steps: Sequence[Step], *, uid: int) -> str:
    """The steps as one line to paste into a shell, ``$(id -u)`` standing for the uid."""
    line = ""
    for index, step in enumerate(steps):
        line += " ".join(shlex.quote(word) for word in step.argv).replace(f"gui/{uid}", "gui/$(id -u)")
        if index < len(steps) - 1:
            line += "; " if step.advisory else " && "
    return line


def run_steps(steps: Sequence[Step], runner: Runner, *, on_run: Callable[[Step], None]) -> list[CommandResult]:
    """Run ``steps`` in order; a failing step that is not advisory stops with a PostrunError."""
    results = []
    for step in steps:
        on_run(step)
        result = runner(step.argv)
        results.append(result)
        if not result.ok and not step.advisory:
            raise PostrunError(" ".join(step.argv), _failure(result))
    return results


def _failure(result: CommandResult) -> str:
    if result.returncode == 127:
        return f"{result.reason} (is this the platform's service manager?)"
    if result.no_user_manager:
        # Where no user manager exists at all (a container, WSL without systemd) neither a login
        # nor lingering brings one: say what records there (README: No user manager at all).
        return (
            f"{result.reason}: no user service manager is reachable (log in to a session, or run"
            " `loginctl enable-linger $USER` once so it runs without one; where there is none,"
            " `postrun capture --daemon` records without it)"
        )
    return result.reason
