"""The real `postrun` and its settings: a value it cannot run with is refused as it loads (one
line naming the variable or the flag, the documented exit code), never found out later by a
running capture; and the settings load wherever it runs, a removed working directory too."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, postrun_command, run_postrun
from tests.support.capture_process import CaptureProcess


@pytest.mark.parametrize(
    ("variable", "value", "limit"),
    [
        ("POSTRUN_POLL_SECONDS", "1e10", "31536000"),
        ("POSTRUN_DEBOUNCE_SECONDS", "1e308", "31536000"),
        ("POSTRUN_RAW_COPY_SECONDS", "1e12", "31536000"),
        ("POSTRUN_FULL_SWEEP_MINUTES", "1e9", "525600"),
    ],
)
def test_a_wait_longer_than_a_year_is_a_configuration_error(
    env: dict[str, str], variable: str, value: str, limit: str
) -> None:
    result = run_postrun("config", "show", env={**env, variable: value})
    key = variable.removeprefix("POSTRUN_").lower()
    assert (result.returncode, result.stderr) == (
        78,
        f"error: {variable}: {key}: must be less than or equal to {limit} (got '{value}')\n",
    )


def test_a_year_long_poll_flag_is_a_usage_error_before_capture_starts(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    # Before: capture started, and its poll thread's wait overflowed (a traceback, capture gone).
    result = subprocess.run(
        [*postrun_command(), "capture", "--cline-dir", str(root), "--poll-seconds", "1e10"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (
        2,
        "error: --poll-seconds: must be less than or equal to 31536000 (got 10000000000.0)\n",
    )


def run_in_removed_folder(folder: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`postrun ARGS` started in ``folder``, which is removed just before it runs (in the child,
    after its chdir): a shell left in a deleted worktree, a capture outliving its folder."""
    folder.mkdir()
    return subprocess.run(
        [*postrun_command(), *args],
        env=env,
        cwd=folder,
        preexec_fn=lambda: os.rmdir(folder),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_commands_run_in_a_removed_working_directory(tmp_path: Path, env: dict[str, str]) -> None:
    # Before: each was "error: internal error: FileNotFoundError ..." (getcwd), exit 1.
    show = run_in_removed_folder(tmp_path / "gone", "config", "show", env=env)
    assert (show.returncode, show.stderr) == (0, "")
    assert f"db = {env['POSTRUN_DB']}  (env POSTRUN_DB)" in show.stdout.splitlines()
    path = run_in_removed_folder(tmp_path / "gone", "config", "path", env=env)
    assert (path.returncode, path.stdout, path.stderr) == (
        0,
        f"{env['XDG_CONFIG_HOME']}/postrun/config.toml\n",
        "",
    )
    sessions = run_in_removed_folder(tmp_path / "gone", "sessions", env=env)
    assert (sessions.returncode, sessions.stderr) == (0, f"no sessions stored in {env['POSTRUN_DB']}\n")


def test_a_relative_path_with_a_removed_working_directory_is_one_line_naming_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    result = run_in_removed_folder(tmp_path / "gone", "config", "show", env={**env, "POSTRUN_CLAUDE_DIR": "projects"})
    assert (result.returncode, result.stdout, result.stderr) == (
        78,
        "",
        "error: POSTRUN_CLAUDE_DIR: claude_dir: a relative path, and the working directory was removed"
        " (got 'projects')\n",
    )
    named = run_in_removed_folder(tmp_path / "gone", "--config", "c.toml", "config", "path", env=env)
    assert (named.returncode, named.stderr) == (
        78,
        "error: --config: a relative path, and the working directory was removed (got 'c.toml')\n",
    )


def test_sighup_after_the_working_directory_was_removed_keeps_capturing(tmp_path: Path, env: dict[str, str]) -> None:
    """README: SIGHUP re-reads the configuration, and a capture kept running. Before, the reload
    stopped at getcwd and capture exited ("internal error: FileNotFoundError")."""
    root = tmp_path / "cline" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    folder = tmp_path / "started-here"
    folder.mkdir()
    config = Path(env["XDG_CONFIG_HOME"]) / "postrun" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'cline_dir = "{root}"\n')
    capture = CaptureProcess(env, tmp_path, cwd=folder)
    try:
        capture.wait_for_log(r"INFO cline: caught up with 1 session in ")
        folder.rmdir()
        config.write_text(f'cline_dir = "{root}"\nfull_sweep_minutes = 4\n')
        capture.send(signal.SIGHUP)
        capture.wait_for_log(rf"INFO capture: configuration reloaded from {config}$")
        capture.wait_for_log(rf"cline: watching {root} \(1 session present, 0 new or changed\)$")
        capture.send(signal.SIGTERM)
        assert capture.process.wait(10) == 0
    finally:
        if capture.process.poll() is None:
            capture.process.kill()
            capture.process.wait()


@pytest.mark.parametrize("key", ["db", "cline_dir", "claude_dir", "codex_dir"])
def test_a_nul_in_a_path_is_a_configuration_error_naming_the_file_and_key(
    tmp_path: Path, env: dict[str, str], key: str
) -> None:
    # Before: capture --once ended in "internal error: ValueError: embedded null byte" (exit 1),
    # and `sessions` looked for a store named by the path cut at the NUL.
    config = tmp_path / "config.toml"
    config.write_text(f'{key} = "{tmp_path}/a\\u0000b"\n')
    environ = {name: value for name, value in env.items() if name != "POSTRUN_DB"}
    for args in (("capture", "--once"), ("sessions",)):
        result = run_postrun("--config", str(config), *args, env=environ)
        assert (result.returncode, result.stdout) == (78, ""), (args, result.stderr)
        assert result.stderr.startswith(f"error: {config}: {key}: a path cannot contain a NUL character (got "), args
        assert result.stderr.count("\n") == 1, args


def test_a_tilde_of_an_unknown_user_is_one_line_naming_where_it_came_from(tmp_path: Path, env: dict[str, str]) -> None:
    # Before: "internal error: RuntimeError: Could not determine home directory." (exit 1).
    user = "postrun-no-such-user"
    config = tmp_path / "config.toml"
    config.write_text(f'cline_dir = "~{user}/sessions"\n')
    reason = f"no user '{user}' to expand '~{user}'"
    cases = [
        (
            ("--config", str(config), "config", "show"),
            env,
            78,
            f"{config}: cline_dir: {reason} (got '~{user}/sessions')",
        ),
        (
            ("config", "show"),
            {**env, "POSTRUN_DB": f"~{user}/p.db"},
            78,
            f"POSTRUN_DB: db: {reason} (got '~{user}/p.db')",
        ),
        (
            ("config", "path"),
            {**env, "POSTRUN_CONFIG": f"~{user}/c.toml"},
            78,
            f"POSTRUN_CONFIG: {reason} (got '~{user}/c.toml')",
        ),
        (("--db", f"~{user}/p.db", "sessions"), env, 2, f"--db: {reason} (got '~{user}/p.db')"),
    ]
    for args, environ, code, line in cases:
        result = run_postrun(*args, env=environ)
        assert (result.returncode, result.stdout, result.stderr) == (code, "", f"error: {line}\n"), args


def test_a_relative_file_argument_with_a_removed_working_directory_is_a_usage_error_naming_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # Before: backup, export -o and raw --to were "error: internal error: FileNotFoundError" (exit 1);
    # restore said "no such backup file", ingest "cannot be looked at" (exit 1).
    root = Path(env["HOME"]) / ".cline" / "data" / "sessions"  # where Cline's bare ids are looked up
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions", root)
    assert run_postrun("ingest", str(root), env=env).returncode == 0
    session = "1790000000000_basic"
    gone = "a relative path, and the working directory was removed"
    for args, named in [
        (("backup", "rel.db"), "rel.db"),
        (("restore", "--yes", "rel.db"), "rel.db"),
        (("export", session, "-o", "rel.md"), "rel.md"),
        (("raw", session, "--to", "out"), "out"),
        (("ingest", "some/folder"), "some/folder"),
        (("ingest", "--agent", "codex", "rollouts"), "rollouts"),
        (("ingest", "--agent", "claude-code", "slug/x.jsonl"), "slug/x.jsonl"),
    ]:
        result = run_in_removed_folder(tmp_path / "gone", *args, env=env)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: {named}: {gone}\n"), args
    # A bare id is still looked up where the agent keeps its sessions.
    by_id = run_in_removed_folder(tmp_path / "gone", "ingest", session, env=env)
    assert (by_id.returncode, by_id.stderr) == (0, ""), by_id.stderr
    assert by_id.stdout.startswith(f"unchanged cline session {session}: 15 steps")
