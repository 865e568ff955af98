"""The real `postrun` executable at the edges of its command line: what it is pointed at, the
bytes it is given, its standard streams and a Ctrl-C, each one line and its exit code."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, postrun_command, run_postrun

SESSION = "1790000000000_basic"


def ingested(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    assert run_postrun("ingest", "--agent", "cline", str(root), env=env).returncode == 0


def test_export_into_a_fifo_writes_into_it_and_leaves_it_a_fifo(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    expected = run_postrun("export", SESSION, env=env).stdout.encode()
    assert len(expected) < 65536  # it fits in the pipe: read once the writer is done
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there, so the writer never waits
    try:
        result = run_postrun("export", SESSION, "-o", str(fifo), env=env)
        assert (result.returncode, result.stderr) == (0, "")
        assert stat.S_ISFIFO(fifo.lstat().st_mode)  # `-o /dev/stdout` likewise: never replaced by a file
        assert os.read(reader, 65536) == expected
    finally:
        os.close(reader)


def test_export_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    target = tmp_path / "shared" / "session.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    result = run_postrun("export", SESSION, "-o", str(link), env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert link.is_symlink() and link.readlink() == target
    assert target.read_text() == run_postrun("export", SESSION, env=env).stdout
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_export_never_writes_over_the_store_or_its_files(tmp_path: Path, env: dict[str, str]) -> None:
    """`-o` replaces the file it names; given the store (a slip of the shell, or a link to it),
    it replaced the whole store with one session's JSON, exit 0, and every session was lost."""
    ingested(tmp_path, env)
    db = Path(env["POSTRUN_DB"])
    link = tmp_path / "latest.json"
    link.symlink_to(db)
    before = db.read_bytes()
    for output in (db, link, Path(f"{db}-wal")):
        result = run_postrun("export", SESSION, "-f", "json", "-o", str(output), env=env)
        assert result.returncode == 2, result.stderr
        assert result.stderr == f"error: --output: {output} is the store's own file ({db})\n"
    assert db.read_bytes() == before and link.is_symlink()
    assert SESSION in run_postrun("sessions", env=env).stdout


NOT_UTF8 = os.fsdecode(b"bad\xff")  # what Python makes of an argument's bytes that are not UTF-8


def shown(text: str) -> str:
    """``text`` as a line on stderr shows it (a byte that is not UTF-8 as ``\\udcff``)."""
    return text.encode("utf-8", "backslashreplace").decode()


def test_an_id_or_query_that_is_not_utf8_is_one_line_not_an_internal_error(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    db = env["POSTRUN_DB"]
    for args in (("show", NOT_UTF8), ("export", NOT_UTF8), ("forget", NOT_UTF8), ("reingest", NOT_UTF8)):
        result = run_postrun(*args, env=env)
        assert (result.returncode, result.stderr) == (1, f"error: no session {shown(NOT_UTF8)} in {db}\n"), args
    found = run_postrun("search", NOT_UTF8, env=env)
    assert (found.returncode, found.stderr) == (0, "no matching steps\n")


def test_a_store_or_backup_path_that_is_not_utf8_is_one_line_and_creates_nothing(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ingested(tmp_path, env)
    reason = "cannot use this path: it is not valid UTF-8, and SQLite takes UTF-8 file names"
    folder = tmp_path / NOT_UTF8
    root = tmp_path / "cline" / "sessions"
    stored = run_postrun("--db", str(folder / "postrun.db"), "ingest", "--agent", "cline", str(root), env=env)
    assert (stored.returncode, stored.stdout) == (1, "")
    assert stored.stderr == f"error: {shown(str(folder))}/postrun.db: {reason}\n"
    assert not folder.exists()  # neither the folder nor an empty store left behind
    backup = tmp_path / f"{NOT_UTF8}.db"
    made = run_postrun("backup", str(backup), env=env)
    assert (made.returncode, made.stderr) == (
        1,
        f"error: {shown(str(backup))}: {reason}\n",
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cline", "home", "store"]


def run_without(descriptor: int, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`postrun ARGS` started with stdin (0) or stdout (1) closed, as by `<&-` or `>&-`."""
    return subprocess.run(
        [*postrun_command(), *args],
        env=env,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        preexec_fn=lambda: os.close(descriptor),  # in the child, after its streams are set up: just before exec
    )


def test_a_closed_stdin_reads_as_empty(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    backup = tmp_path / "backup.db"
    assert run_postrun("backup", str(backup), env=env).returncode == 0
    confirm = run_without(0, "restore", str(backup), env=env)  # no one to confirm: as when stdin is not a terminal
    assert (confirm.returncode, confirm.stderr) == (2, "error: --yes: restore replaces the store: confirm with --yes\n")
    served = run_without(0, "mcp", env=env)  # no client: as when stdin is at its end
    assert (served.returncode, served.stdout, served.stderr) == (0, "", "")


def test_a_closed_stdout_takes_the_output_nowhere(tmp_path: Path, env: dict[str, str]) -> None:
    ingested(tmp_path, env)
    for args in (("export", SESSION), ("export", SESSION, "-f", "html"), ("sessions",)):
        result = run_without(1, *args, env=env)
        assert result.returncode == 0 and "error" not in result.stderr, (args, result.stderr)


def test_a_full_stdout_is_one_line_naming_stdout(tmp_path: Path, env: dict[str, str]) -> None:
    """`> /dev/full` (a full disk or quota behind a redirect): the write fails, and says where."""
    ingested(tmp_path, env)
    for args in (("export", SESSION), ("sessions",), ("config", "show")):
        with open("/dev/full", "w") as full:
            result = subprocess.run(
                [*postrun_command(), *args], env=env, text=True, timeout=60, stdout=full, stderr=subprocess.PIPE
            )
        assert (result.returncode, result.stderr) == (1, "error: stdout: No space left on device\n"), args


# The real `postrun` entry point, interrupted (KeyboardInterrupt, as Ctrl-C raises it) while it
# imports typer: the moment a Ctrl-C right after the command was typed lands in.
INTERRUPTED_AT_START = """
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Interrupt())
from postrun.cli import main
sys.argv = ["postrun", "sessions"]
main()
"""


# The real `postrun` entry point, sent Ctrl-C (a real SIGINT to itself) while typer parses the
# arguments: the moment its global options are set, before any command runs.
INTERRUPTED_WHILE_PARSING = """
import os, signal, sys
import postrun.cli.common as common

class Options(common.GlobalOptions):
    armed = False

    def __setattr__(self, name, value):
        if name == "verbose" and Options.armed:
            os.kill(os.getpid(), signal.SIGINT)
        super().__setattr__(name, value)

common.state = Options()
Options.armed = True
import postrun.cli.app
postrun.cli.app.state = common.state
from postrun.cli import main
sys.argv = ["postrun", "sessions"]
main()
"""


@pytest.mark.parametrize("script", [INTERRUPTED_AT_START, INTERRUPTED_WHILE_PARSING], ids=["importing", "parsing"])
def test_ctrl_c_while_the_command_line_starts_is_one_line_and_130(env: dict[str, str], script: str) -> None:
    # While parsing, before 5e6da49: typer turned the KeyboardInterrupt into a silent exit 130.
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "interrupted\n")


def test_one_session_is_counted_as_one_session(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    once = run_postrun("capture", "--once", "--cline-dir", str(root), env=env)
    assert once.returncode == 0, once.stderr
    assert once.stdout.startswith("summary: 1 session, 1 ingested, 0 updated, 0 unchanged, 0 torn, 0 failed in ")
    status = run_postrun("status", env=env)
    assert f"store: {env['POSTRUN_DB']} (1 session, 15 steps)\n" in status.stdout


def test_serve_says_which_hosts_it_takes_as_readme_does(env: dict[str, str]) -> None:
    # README: `--host` takes a loopback address: 127.0.0.1, any other 127.x.y.z, or ::1.
    assert "127.x.y.z" in " ".join(run_postrun("serve", "--help", env=env).stdout.split())
    refused = run_postrun("serve", "--host", "10.0.0.1", env=env)
    assert (refused.returncode, refused.stderr) == (
        2,
        "error: --host: refusing to listen on 10.0.0.1: the review app binds only a loopback address"
        " (127.0.0.1, any other 127.x.y.z, or ::1)\n",
    )


def test_a_backup_of_no_store_creates_no_folder(env: dict[str, str]) -> None:
    store = Path(env["POSTRUN_DB"])
    result = run_postrun("backup", env=env)
    assert (result.returncode, result.stderr) == (
        1,
        f"error: {store}: no store yet (run `postrun ingest` or `postrun capture`)\n",
    )
    assert not store.parent.exists()  # neither the store's folder nor its backups/


def test_an_empty_session_id_names_no_session(tmp_path: Path, env: dict[str, str]) -> None:
    # Before: '' was a prefix of every id, so with one session stored `forget "$ID" --yes` (an
    # unset variable) forgot it, and show/export/raw took it.
    ingested(tmp_path, env)
    for args in (("forget", "", "--yes"), ("show", ""), ("export", ""), ("reingest", "")):
        result = run_postrun(*args, env=env)
        assert (result.returncode, result.stdout, result.stderr) == (
            2,
            "",
            "error: ID: empty (a session id, or a unique prefix of one)\n",
        ), args
    assert run_postrun("show", SESSION, env=env).returncode == 0  # still stored


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--db", "", "search", "x"), "'--db'"),
        (("--config", "", "doctor"), "'--config'"),
        (("capture", "--once", "--cline-dir", ""), "'--cline-dir'"),
        (("export", SESSION, "-o", ""), "'--output' / '-o'"),
        (("raw", SESSION, "--to", " \t"), "'--to'"),
        (("backup", " "), "'[FILE]'"),
        (("restore", "", "--yes"), "'FILE'"),
    ],
)
def test_an_empty_path_is_a_usage_error_and_touches_nothing(
    tmp_path: Path, env: dict[str, str], args: tuple[str, ...], named: str
) -> None:
    # Before: '' was the working directory, so `capture --cline-dir "$UNSET"` watched the folder
    # the command ran in, and `--db "$UNSET"` named that folder as the store.
    ingested(tmp_path, env)
    before = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*"))
    result = subprocess.run(
        [*postrun_command(), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout) == (2, ""), args
    assert f"Invalid value for {named}: an empty path names nothing (" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: postrun"), result.stderr
    assert sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*")) == before


def test_a_limit_past_sqlites_integers_lists_everything(tmp_path: Path, env: dict[str, str]) -> None:
    # Before: `-n` past 2**63 - 1 (SQLite's largest integer) was "internal error: OverflowError",
    # exit 1; "at most this many" of a number no store reaches is every one.
    ingested(tmp_path, env)
    huge = str(10**20)
    for args in (("sessions",), ("search", "date"), ("search", "--failed")):
        every = run_postrun(*args, env=env)
        result = run_postrun(*args, "-n", huge, env=env)
        assert (result.returncode, result.stderr) == (0, ""), args
        assert result.stdout == every.stdout and SESSION in result.stdout, args


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("sessions", "--bogus"),
            "error: postrun sessions: No such option: --bogus (postrun sessions -h shows the usage)",
        ),
        (("nosuch",), "error: postrun: No such command 'nosuch' (postrun -h shows the usage)"),
        (("export",), "error: postrun export: Missing argument 'ID' (postrun export -h shows the usage)"),
        (
            ("sessions", "-n", "many"),
            "error: postrun sessions: Invalid value for '--limit' / '-n': Input should be a valid integer, unable to"
            " parse string as an integer (postrun sessions -h shows the usage)",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(env: dict[str, str], args: tuple[str, ...], line: str) -> None:
    # Before: click's paragraph (the usage line, a hint, a blank line, then "Error: ..."): four lines
    # where every other error is one.
    result = run_postrun(*args, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", line + "\n")


def test_help_version_and_a_commands_own_exit_code_are_unchanged(tmp_path: Path, env: dict[str, str]) -> None:
    assert run_postrun("--version", env=env).stdout.startswith("postrun ")
    bare = run_postrun(env=env)  # a group named without its command shows its help, exit 2
    assert (
        bare.returncode == 2
        and bare.stderr.startswith("Usage: postrun [OPTIONS] COMMAND")
        and "sessions" in bare.stderr
    )
    helped = run_postrun("sessions", "-h", env=env)
    assert (helped.returncode, helped.stderr) == (0, "") and helped.stdout.startswith("Usage: postrun sessions")
    missing = run_postrun("export", "nosuchsession", env=env)
    assert missing.returncode not in (0, 2) and missing.stderr.count("\n") == 1, missing.stderr
