"""What every command shares: global options, settings loading, the store, error reporting."""

from __future__ import annotations

import errno
import functools
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import typer

from postrun.errors import PostrunError, UsageError
from postrun.exitcodes import ExitCode
from postrun.startsignals import interrupt_reported
from postrun.text import plural, printable

# The library is imported where a command uses it, not here: every run of `postrun` imports
# this module, and `--version`, `--help` or a command that never loads settings should not pay
# for pydantic, the store or the agents' adapters.
if TYPE_CHECKING:
    from postrun.capture.log import ProgressBar
    from postrun.paths import Paths
    from postrun.settings import LoadedSettings

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class GlobalOptions:
    config: Path | None = None
    db: Path | None = None
    verbose: bool = False


state = GlobalOptions()


# A write that fails for want of room, or the device behind it.
_STDOUT_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def say(message: str) -> None:
    """One line on stderr (errors, warnings)."""
    typer.echo(message, err=True)


def command(function: Callable[P, R]) -> Callable[P, R]:
    """Turn expected errors into one line and their exit code; never print a traceback
    unless ``--verbose`` asks for one."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            result = function(*args, **kwargs)
            if sys.stdout is not None:
                sys.stdout.flush()  # here, not at exit: a reader that left is then noticed below
            return result
        except BrokenPipeError:
            # The reader of stdout left (`| head`): stop quietly, as tools that SIGPIPE ends do.
            _discard_stdout()
            raise typer.Exit(int(ExitCode.BROKEN_PIPE)) from None
        except PostrunError as exc:
            say(f"error: {exc}")
            raise typer.Exit(int(exc.exit_code)) from None
        except OSError as exc:
            # Postrun's own files fail as PostrunErrors naming them: a write error naming no file
            # is stdout's (`> /dev/full`, a full disk or quota behind a redirect).
            if exc.filename is not None or exc.errno not in _STDOUT_ERRORS:
                _internal_error(exc)
            _discard_stdout()
            say(f"error: stdout: {exc.strerror}")
            raise typer.Exit(int(ExitCode.FAILURE)) from None
        except KeyboardInterrupt:
            say("interrupted")
            interrupt_reported()
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
            _internal_error(exc)

    return wrapper


def run_app(app: typer.Typer) -> NoReturn:
    """Run the command line; a usage error (an unknown option, a bad value) is one line,
    ``error: postrun <command>: <problem> (…)``, and ``ExitCode.USAGE``, as every other error is."""
    try:
        code = app(prog_name="postrun", standalone_mode=False)
    except typer.TyperException as exc:  # typer's click errors: usage errors (exit 2) among them
        context = getattr(exc, "ctx", None)
        if context is not None and exc.format_message() == context.get_help():
            say(exc.format_message())  # a group named without its command: its help, as before
        else:
            say(_error_line(exc))
        sys.exit(exc.exit_code)
    except typer.Abort:
        say("Aborted!")
        sys.exit(int(ExitCode.FAILURE))
    # Not standalone, a command's ``typer.Exit(code)`` comes back as its code (commands return None).
    sys.exit(code if isinstance(code, int) else 0)


def _error_line(exc: typer.TyperException) -> str:
    """One line for an error typer's parsing met: the command it is about (a usage error's), the
    problem, and where the usage is shown."""
    problem = " ".join(exc.format_message().split()).removesuffix(".")
    context = getattr(exc, "ctx", None)
    if context is None:
        return f"error: {problem}"
    where = context.command_path
    return f"error: {where}: {problem} ({where} -h shows the usage)"


def _internal_error(exc: Exception) -> NoReturn:
    if state.verbose:
        traceback.print_exc()
    say(f"error: internal error: {type(exc).__name__}: {exc} (run with -v for details)")
    raise typer.Exit(int(ExitCode.FAILURE)) from None


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of it has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def load(**overrides: Any) -> tuple[LoadedSettings, Paths]:
    """Settings for this run (flags > POSTRUN_* > config file > defaults) and their paths."""
    from postrun.settings import load_settings, paths_for

    loaded = load_settings(config_file=state.config, overrides={"db": state.db, **overrides}, environ=os.environ)
    for warning in loaded.warnings:
        say(f"warning: {warning}")
    return loaded, paths_for(loaded, os.environ)


def path_text(value: str) -> Path:
    """A path option's or argument's text as a path (typer's ``parser``). An empty one is a usage
    error: as a path it is the working directory, so ``--cline-dir "$UNSET"`` watched whatever
    folder the command ran in, and ``--db "$UNSET"`` named it as the store."""
    if not value.strip():  # blanks only: a name no one means (settings take them as unset)
        raise typer.BadParameter("an empty path names nothing")
    return Path(value)


def given_path(path: Path) -> Path:
    """A path argument as given, once it can still mean something. A relative one given after
    the working directory was removed is a usage error naming it (as ``--config``'s is a
    configuration error), not ``getcwd``'s internal error further on (README: one line naming
    the file and the problem)."""
    from postrun.paths import RELATIVE_GONE, reachable

    if not reachable(path):
        raise UsageError(printable(os.fspath(path)), RELATIVE_GONE)
    return path


def rerun_command(loaded: LoadedSettings, verb: str) -> tuple[str, ...]:
    """How another program (a service, an MCP client) starts this Postrun's ``verb``: with the
    config file and store this command line named, which would not reach it otherwise."""
    from postrun import units
    from postrun.paths import CONFIG_VARIABLE, env_value, working_dir

    named_config = state.config is not None or env_value(os.environ, CONFIG_VARIABLE) is not None
    # A removed working directory: "/" leaves an absolute argv[0] as it is, and a relative one
    # (no longer a file) falls back to the interpreter, which is absolute.
    program = units.program_command(sys.argv[0], sys.executable, cwd=working_dir() or Path("/"))
    config_file = loaded.config_path if named_config else None
    db = loaded.settings.db if state.db is not None else None
    return units.capture_command(program, config_file=config_file, db=db, verb=verb)


class _LineProgress:
    """Where no terminal shows a bar: one line when a long pass starts."""

    def start(self, total: int, label: str = "working") -> None:
        say(f"{label}: {plural(total, 'session', grouped=False)}")

    def advance(self) -> None:
        return None

    def finish(self) -> None:
        return None


def progress() -> ProgressBar | _LineProgress:
    """A progress bar on stderr when it is a terminal, else a line at the start."""
    from postrun.capture.log import ProgressBar

    return ProgressBar(sys.stderr) if sys.stderr.isatty() else _LineProgress()


def check_agent(agent: str | None) -> None:
    from postrun.agents.registry import check_kind

    check_kind(agent, "--agent")
