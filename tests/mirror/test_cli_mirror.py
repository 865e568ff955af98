"""`postrun mirror status|push`, `config show` and `doctor` with a mirror, as real processes."""

from __future__ import annotations

import fcntl
import re
import subprocess
from pathlib import Path

from postrun.mirror.schema import SCHEMA_VERSION
from tests.conftest import postrun_command, run_postrun
from tests.mirror.conftest import Mirror
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support import mirror_check
from tests.support.capture_process import CaptureProcess, copy_data
from tests.support.postgres import APP_USER
from tests.support.terminal import on_a_terminal

SECRET = "pw-that-must-never-print"


def store_with_fixtures(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    root = copy_data("cline-real/e_plan_then_act", tmp_path / "cline")
    env = env | {"POSTRUN_CLINE_DIR": str(root)}
    assert run_postrun("capture", "--once", env=env).returncode == 0
    return env


def test_push_then_status_caught_up_then_behind(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    env = store_with_fixtures(tmp_path, mirror_env)
    before = run_postrun("mirror", "status", env=env)
    assert before.returncode == 1, before.stderr
    assert f"mirror: 127.0.0.1/{mirror.database} (postgresql://***@127.0.0.1:{mirror.server.port}/" in before.stdout
    assert "server: reachable: schema postrun not created yet" in before.stdout
    assert "last push: never" in before.stdout

    pushed = run_postrun("mirror", "push", env=env)
    assert pushed.returncode == 0, pushed.stderr
    sessions = len(mirror_check.store_sessions(Path(env["POSTRUN_DB"])))
    assert pushed.stdout.startswith(f"mirror 127.0.0.1/{mirror.database}: pushed {sessions} session")
    assert pushed.stdout.rstrip().endswith("; 0 sessions waiting")
    assert pushed.stderr == ""  # no progress bar when stderr is not a terminal
    with mirror.server.admin(mirror.database) as admin:
        assert mirror_check.differences(Path(env["POSTRUN_DB"]), admin) == []

    after = run_postrun("mirror", "status", env=env)
    assert after.returncode == 0, after.stdout + after.stderr
    assert f"server: reachable: schema postrun version {SCHEMA_VERSION}\n" in after.stdout
    assert "waiting: 0 sessions" in after.stdout and "last push: 20" in after.stdout

    # A session changes: status says so until the next push.
    session = Synthetic(synthetic_id(1), seed=1)
    session.write(Path(env["POSTRUN_CLINE_DIR"]))
    assert run_postrun("capture", "--once", env=env).returncode == 0
    behind = run_postrun("mirror", "status", env=env)
    assert behind.returncode == 1
    assert "waiting: 1 session (waiting since 20" in behind.stdout, behind.stdout


def test_a_server_that_is_down_is_one_line_and_exit_1(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env = store_with_fixtures(tmp_path, mirror_env)
    mirror.server.stop()
    status = run_postrun("mirror", "status", env=env)
    assert status.returncode == 1
    assert "server: unreachable: Connection refused" in status.stdout
    pushed = run_postrun("mirror", "push", env=env)
    assert pushed.returncode == 1
    assert pushed.stderr.strip().splitlines() == [f"error: mirror 127.0.0.1/{mirror.database}: Connection refused"]


def test_push_without_a_store_yet_is_one_line_and_creates_nothing(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    # A CI runner that recorded nothing: its store's folder may not exist yet, or be empty.
    for folder in (tmp_path / "never-made", tmp_path / "empty"):
        db = folder / "postrun.db"
        if folder.name == "empty":
            folder.mkdir()
        pushed = run_postrun("mirror", "push", env=mirror_env | {"POSTRUN_DB": str(db)})
        assert pushed.returncode == 1, pushed.stderr
        assert pushed.stderr.strip().splitlines() == [
            f"error: {db}: no store yet (run `postrun ingest` or `postrun capture`)"
        ]
        # Nothing made: neither the folder nor a push lock beside a store that is not there.
        assert (list(folder.iterdir()) == []) if folder.name == "empty" else not folder.exists()


def test_push_while_capture_runs_takes_turns_and_refuses_while_a_push_holds_the_lock(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env = store_with_fixtures(tmp_path, mirror_env)
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        pushed = run_postrun("mirror", "push", env=env)
        assert pushed.returncode == 0, pushed.stderr
        assert "pushed 0 sessions" in pushed.stdout  # capture had pushed them already
        lock = Path(env["POSTRUN_DB"] + ".mirror.lock")
        with lock.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            refused = run_postrun("mirror", "push", env=env)
        assert refused.returncode == 75
        assert (
            refused.stderr.strip()
            == f"error: {lock}: another postrun is pushing this store right now; try again in a moment"
        )
        with mirror.server.admin(mirror.database) as admin:
            assert mirror_check.differences(Path(env["POSTRUN_DB"]), admin) == []
        assert capture.lines(r" (ERROR|WARNING) ") == []
    finally:
        capture.kill()


def test_push_shows_a_progress_bar_on_a_terminal(tmp_path: Path, mirror_env: dict[str, str]) -> None:
    env = store_with_fixtures(tmp_path, mirror_env)
    result, shown = on_a_terminal(
        lambda terminal: subprocess.run(
            [*postrun_command(), "mirror", "push"], env=env, stderr=terminal, stdout=subprocess.PIPE, timeout=120
        )
    )
    assert result.returncode == 0
    assert b"pushing [" in shown and b"sessions" in shown


def test_no_mirror_configured_and_a_password_in_the_uri(tmp_path: Path, env: dict[str, str]) -> None:
    missing = run_postrun("mirror", "push", env=env)
    assert missing.returncode == 78
    assert missing.stderr.startswith("error: mirror_url: not set (POSTRUN_MIRROR_URL, or mirror_url in ")
    with_password = env | {"POSTRUN_MIRROR_URL": f"postgresql://ada:{SECRET}@db.example.com/team"}
    for args in (("config", "show"), ("mirror", "status"), ("capture", "--once")):
        refused = run_postrun(*args, env=with_password)
        assert refused.returncode == 78, args
        assert refused.stderr.strip().splitlines() == [
            "error: POSTRUN_MIRROR_URL: mirror_url: a password in the URI is refused:"
            " use ~/.pgpass, PGPASSFILE or a service file for the password"
        ]
        assert SECRET not in refused.stdout + refused.stderr


def test_config_show_masks_the_user_info(env: dict[str, str]) -> None:
    shown = run_postrun("config", "show", env=env | {"POSTRUN_MIRROR_URL": "postgresql://ada@db.example.com/team"})
    assert shown.returncode == 0
    assert "mirror_url = postgresql://***@db.example.com/team  (env POSTRUN_MIRROR_URL)" in shown.stdout
    assert "ada" not in shown.stdout


def test_doctor_checks_the_mirror_when_one_is_configured(
    tmp_path: Path, env: dict[str, str], mirror_env: dict[str, str], mirror: Mirror
) -> None:
    assert "mirror:" not in run_postrun("doctor", env=env).stdout  # none configured: no check
    env = store_with_fixtures(tmp_path, mirror_env)
    assert run_postrun("mirror", "push", env=env).returncode == 0
    healthy = run_postrun("doctor", env=env)
    line = next(line for line in healthy.stdout.splitlines() if " mirror: " in line)
    assert line.startswith(f"ok    mirror: 127.0.0.1/{mirror.database} (postgresql://***@")
    assert f"schema postrun version {SCHEMA_VERSION}; secrets masked; 0 sessions waiting, last push 20" in line
    mirror.server.stop()
    down = run_postrun("doctor", env=env)
    line = next(line for line in down.stdout.splitlines() if " mirror: " in line)
    assert line.startswith("warn  mirror: ") and "Connection refused" in line
    assert down.returncode == healthy.returncode  # recording never depends on the mirror


def checks_of(doctor: str) -> list[str]:
    """The names of the checks doctor printed (``ok    store: ...`` -> ``store``), in order."""
    return [line[6:].partition(":")[0] for line in doctor.splitlines() if not line.startswith(" ")]


def test_an_option_libpq_refuses_is_a_configuration_error_and_doctor_runs_every_check(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env = store_with_fixtures(tmp_path, mirror_env)
    healthy = checks_of(run_postrun("doctor", env=env).stdout)
    for option, problem in (
        ("sslmod=require", 'unknown option "sslmod"'),
        (
            "sslmode=bogus",
            "invalid sslmode value 'bogus' (expected one of: disable, allow, prefer, require, verify-ca, verify-full)",
        ),
        ("port=99999", "invalid port number '99999'"),
    ):
        wrong = env | {"POSTRUN_MIRROR_URL": f"{mirror.url}?{option}"}
        for args in (("mirror", "status"), ("mirror", "push")):
            refused = run_postrun(*args, env=wrong)
            assert (refused.returncode, refused.stdout) == (78, ""), (args, refused.stdout + refused.stderr)
            assert refused.stderr.splitlines() == [f"error: POSTRUN_MIRROR_URL: mirror_url: {problem}"], args
        doctor = run_postrun("doctor", env=wrong)
        assert doctor.returncode == 78, doctor.stdout + doctor.stderr
        assert "internal error" not in doctor.stdout + doctor.stderr
        assert checks_of(doctor.stdout) == healthy  # every check ran
        assert f"fail  mirror: POSTRUN_MIRROR_URL: mirror_url: {problem}" in doctor.stdout


def test_without_psycopg_the_mirror_commands_say_what_to_install(tmp_path: Path, mirror_env: dict[str, str]) -> None:
    blocked = tmp_path / "no-psycopg" / "psycopg"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('psycopg is not installed here')\n")
    env = mirror_env | {"PYTHONPATH": str(blocked.parent)}
    for args in (("mirror", "status"), ("mirror", "push")):
        result = run_postrun(*args, env=env)
        assert (result.returncode, result.stdout) == (78, ""), (args, result.stderr)
        assert result.stderr == "error: the team mirror needs the postgres extra: pip install 'postrun[postgres]'\n"
    doctor = run_postrun("doctor", env=env)
    assert "warn  mirror: the team mirror needs the postgres extra: pip install 'postrun[postgres]'" in doctor.stdout


def test_status_says_whether_the_server_refused_the_login_or_a_permission(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env = store_with_fixtures(tmp_path, mirror_env)
    passfile = Path(env["PGPASSFILE"])
    mirror.server.write_passfile(passfile, "not-the-password-x7")
    login = run_postrun("mirror", "status", env=env)
    assert login.returncode == 1
    assert f'server: refused the login: password authentication failed for user "{APP_USER}"' in login.stdout
    mirror.server.write_passfile(passfile)
    with mirror.server.admin() as admin:
        admin.execute(f"REVOKE CONNECT ON DATABASE {mirror.database} FROM PUBLIC, {APP_USER}")
    permission = run_postrun("mirror", "status", env=env)
    assert permission.returncode == 1
    assert f'server: refused a permission: permission denied for database "{mirror.database}"' in permission.stdout
    doctor = run_postrun("doctor", env=env)
    assert "refused a permission" in doctor.stdout and "needs CONNECT on the database" in doctor.stdout
    mirror.server.stop()
    down = run_postrun("mirror", "status", env=env)
    assert "server: unreachable: Connection refused" in down.stdout


LOG_LINE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d (DEBUG|INFO|WARNING|ERROR) "


def test_psycopgs_own_warnings_go_through_the_log_of_push_and_capture(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    # A server whose time zone Python does not know: psycopg warns on every connection (as it
    # warns "error ignored terminating <psycopg.Pipeline [BAD]>" when a server dies mid-batch).
    env = store_with_fixtures(tmp_path, mirror_env)
    with mirror.server.admin() as admin:
        admin.execute(f"ALTER DATABASE {mirror.database} SET timezone = 'XYZ+3'")
    warning = "psycopg: unknown PostgreSQL timezone: 'XYZ+3'; will use UTC"
    for args in (("mirror", "push"), ("mirror", "push", "--all")):
        pushed = run_postrun(*args, env=env)
        assert pushed.returncode == 0, pushed.stderr
        lines = pushed.stderr.splitlines()
        assert lines and all(re.match(LOG_LINE, line) for line in lines), lines  # time and level, every line
        assert any(line.endswith(f"WARNING {warning}") for line in lines), lines
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(r"mirror .*: caught up")
        capture.wait_for_log(re.escape(f"WARNING {warning}"))
        assert [line for line in capture.log().splitlines() if not re.match(LOG_LINE, line)] == []
    finally:
        capture.kill()


def test_capture_records_without_a_mirror_whose_options_libpq_refuses(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env = store_with_fixtures(tmp_path, mirror_env) | {"POSTRUN_MIRROR_URL": f"{mirror.url}?sslmod=require"}
    capture = CaptureProcess(env, tmp_path)
    try:
        capture.wait_for_log(
            rf'ERROR mirror 127\.0\.0\.1/{mirror.database}: mirror_url: unknown option "sslmod";'
            " capture records without the mirror"
        )
        session = Synthetic(synthetic_id(2), seed=2)
        session.write(Path(env["POSTRUN_CLINE_DIR"]))
        capture.wait_for_log(rf"INFO cline ingested {session.session_id} ")
        assert capture.lines("Traceback|internal error") == []
    finally:
        capture.kill()
