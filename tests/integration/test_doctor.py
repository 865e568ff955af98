"""``postrun doctor``'s checks over real files, a real store and a recording fake systemctl."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import apsw
import pytest

from postrun.agents.cline.checks import check_approvals, check_sessions
from postrun.doctor import DoctorInputs, exit_code, run_checks
from postrun.doctor.machine_checks import check_inotify, check_python
from postrun.doctor.service_checks import check_service, check_web_service
from postrun.doctor.store_checks import check_store
from postrun.store.db import STORE_VERSION, Database
from postrun.units import CommandResult, ServiceStatus, State
from tests.conftest import FIXTURES

NO_BUS = "Failed to connect to bus: No medium found\n"


def no_user_manager(argv: Sequence[str]) -> CommandResult:
    return CommandResult(tuple(argv), 1, "", NO_BUS)


def make_store(path: Path) -> Path:
    Database.open(path).close()
    return path


def status(**changes: object) -> ServiceStatus:
    values: dict[str, object] = {
        "platform": "linux",
        "user_file": Path("/home/u/.config/systemd/user/postrun.service"),
        "file": Path("/home/u/.config/systemd/user/postrun.service"),
        "command": (shutil.which("sh") or "/bin/sh", "capture"),
        "enabled": State(True, "enabled"),
        "running": State(True, "active"),
    }
    values.update(changes)
    return ServiceStatus(**values)  # type: ignore[arg-type]


def test_python_check_names_the_interpreter_and_dependencies() -> None:
    check = check_python()
    assert check.level == "ok"
    assert check.detail.startswith("Python 3.")
    for dependency in ("apsw", "watchdog", "pydantic-settings", "typer"):
        assert f"{dependency} " in check.detail


def test_store_check_ok_then_fails_on_a_corrupt_file(tmp_path: Path) -> None:
    db = make_store(tmp_path / "store" / "postrun.db")
    healthy = check_store(db)
    assert healthy.level == "ok", healthy
    assert f"schema version {STORE_VERSION} of {STORE_VERSION}, integrity ok" in healthy.detail
    db.write_bytes(b"this is not a database" * 100)
    broken = check_store(db)
    assert broken.level == "fail"
    assert broken.detail == f"{db}: cannot use the store (the file is not a SQLite database)"


def test_store_written_by_a_newer_postrun_fails(tmp_path: Path) -> None:
    db = make_store(tmp_path / "store" / "postrun.db")
    connection = apsw.Connection(str(db))
    connection.execute(f"pragma user_version={STORE_VERSION + 1}")
    connection.close()
    check = check_store(db)
    assert (check.level, check.hint) == ("fail", "upgrade Postrun")
    assert "written by a newer Postrun" in check.detail


def test_store_readable_by_others_is_a_warning_with_the_modes_it_found(tmp_path: Path) -> None:
    db = make_store(tmp_path / "store" / "postrun.db")
    db.chmod(0o644)
    db.parent.chmod(0o755)
    check = check_store(db)
    assert check.level == "warn"
    assert f"{db.parent} was 0755" in check.detail and f"{db} was 0644" in check.detail
    assert check.hint.startswith(f"chmod 700 {db.parent}")


def test_missing_store_is_only_a_warning(tmp_path: Path) -> None:
    check = check_store(tmp_path / "nowhere" / "postrun.db")
    assert check.level == "warn" and check.detail.startswith("no store yet")
    assert not (tmp_path / "nowhere").exists()  # the doctor never creates one


def test_sessions_root_missing_fails_and_present_counts(tmp_path: Path) -> None:
    missing, count = check_sessions(tmp_path / "absent")
    assert (missing.level, count) == ("fail", None)
    assert missing.detail == f"{tmp_path / 'absent'}: no such folder"
    root = tmp_path / "data" / "sessions"
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", tmp_path / "data")
    found, count = check_sessions(root)
    assert (found.level, count, found.detail) == ("ok", 1, f"1 session in {root}")


def test_approvals_names_the_source_found_and_warns_only_without_any(tmp_path: Path) -> None:
    root = tmp_path / "data" / "sessions"
    root.mkdir(parents=True)
    cli = root.parent / "settings" / "global-settings.json"
    vscode = root.parent / "globalState.json"
    neither = check_approvals(root)
    assert neither.level == "warn"
    assert neither.detail == f"neither CLI settings ({cli}) nor VS Code's globalState.json ({vscode}): defaults"
    cli.parent.mkdir()
    cli.write_text("{}")
    assert (check_approvals(root).level, check_approvals(root).detail) == ("ok", f"CLI settings {cli}")
    vscode.write_text("{}")
    both = check_approvals(root)
    assert (both.level, both.detail) == ("ok", f"CLI settings {cli}; VS Code's globalState.json {vscode}")
    cli.unlink()
    assert (check_approvals(root).level, check_approvals(root).detail) == ("ok", f"VS Code's globalState.json {vscode}")


def test_service_check_is_never_a_failure() -> None:
    assert check_service(status(file=None), {}).level == "warn"
    unknown = check_service(status(enabled=State(None, "no user manager")), {})
    assert unknown.level == "warn" and "loginctl enable-linger" in unknown.hint
    # systemctl reads "disabled" from the files with no manager to run it: enabling would fail.
    unmanaged = check_service(status(enabled=State(False, "disabled"), running=State(None, "no user manager")), {})
    assert unmanaged.level == "warn" and "systemctl" not in unmanaged.hint, unmanaged
    assert unmanaged.detail.endswith("enabled: no (disabled); running: unknown (no user manager)")
    assert "`postrun capture --daemon`" in unmanaged.hint and "`postrun capture --daemon`" in unknown.hint
    disabled = check_service(status(enabled=State(False, "disabled")), {})
    assert (disabled.level, disabled.hint) == ("warn", "`systemctl --user enable --now postrun`")
    stale = check_service(status(command=("/gone/bin/postrun", "capture")), {})
    assert stale.level == "warn" and "/gone/bin/postrun, which does not exist" in stale.detail
    assert stale.hint == "`postrun service install --now` rewrites it for this Postrun"
    shell = check_service(status(), {"POSTRUN_DB": "/x.db"})
    assert shell.level == "warn" and "POSTRUN_DB set here does not reach the service" in shell.detail
    assert check_service(status(), {}).level == "ok"


def test_web_service_check_warns_only_when_its_unit_is_stale_or_stopped() -> None:
    web = Path("/home/u/.config/systemd/user/postrun-web.service")
    assert check_web_service(status(file=None)).level == "ok"  # optional
    stale = check_web_service(status(file=web, command=("/gone/bin/postrun", "serve")))
    assert (stale.level, stale.hint) == ("warn", "`postrun service install --web --now` rewrites it for this Postrun")
    assert stale.detail.endswith("; it runs /gone/bin/postrun, which does not exist")
    stopped = check_web_service(status(file=web, running=State(False, "inactive")))
    assert (stopped.level, stopped.hint) == ("warn", "`systemctl --user enable --now postrun-web`")
    assert check_web_service(status(file=web)).level == "ok"


@pytest.mark.parametrize(
    ("limit", "sessions", "level"),
    [(8192, 5000, "ok"), (40, 5000, "warn"), (40, 10, "ok"), (None, 10, "warn"), (8192, None, "ok")],
)
def test_inotify_limit_against_the_sessions(limit: int | None, sessions: int | None, level: str) -> None:
    check = check_inotify("linux", use_events=True, sessions=sessions, read_limit=lambda: limit)
    assert check.level == level
    if level == "warn" and limit is not None:
        assert "sysctl" in check.hint


def test_inotify_is_not_checked_where_it_is_not_used() -> None:
    never = lambda: pytest.fail("the limit must not be read")  # noqa: E731
    assert check_inotify("macos", use_events=True, sessions=10**6, read_limit=never).level == "ok"
    assert check_inotify("linux", use_events=False, sessions=10**6, read_limit=never).level == "ok"


def doctor_environ(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "POSTRUN_CLINE_DIR": str(tmp_path / "data" / "sessions"),
        "POSTRUN_CLAUDE_DIR": str(tmp_path / "claude" / "projects"),
        "POSTRUN_DB": str(tmp_path / "store" / "postrun.db"),
    }


def test_every_check_of_the_issue_in_order_and_only_three_can_fail(tmp_path: Path) -> None:
    limit_file = tmp_path / "max_user_watches"
    limit_file.write_text("4\n")
    inputs = DoctorInputs(
        environ=doctor_environ(tmp_path),
        config_file=None,
        overrides={},
        platform="linux",
        runner=no_user_manager,
        uid=1000,
        inotify_watches_file=limit_file,
    )
    checks = run_checks(inputs)
    names = [check.name for check in checks]
    assert names == [
        "python",
        "config",
        "store",
        "exclude",
        "sources",
        "sessions",
        "approvals",
        "claude-code sessions",
        "codex sessions",
        "capture",
        "service",
        "web service",
        "inotify",
    ]
    assert {check.name for check in checks if check.level == "fail"} == {"sessions"}
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data", tmp_path / "data")
    for _ in range(7):
        (tmp_path / "data" / "sessions" / f"17900000000{_}_x").mkdir()
        (tmp_path / "data" / "sessions" / f"17900000000{_}_x" / f"17900000000{_}_x.messages.json").write_text("[]")
    shutil.copytree(FIXTURES / "claude-code-real" / "a_read_edit_write" / "claude", tmp_path / "claude")
    make_store(tmp_path / "store" / "postrun.db")
    levels = {check.name: check.level for check in run_checks(inputs)}
    assert levels == {
        "python": "ok",
        "config": "ok",
        "store": "ok",
        "exclude": "ok",
        "sources": "ok",
        "sessions": "ok",
        "approvals": "ok",
        "claude-code sessions": "ok",
        "codex sessions": "warn",  # Codex has not run here: its folder is waited for
        "capture": "warn",
        "service": "warn",
        "web service": "ok",  # optional, not installed
        "inotify": "warn",  # 9 session folders and the roots against a limit of 4
    }


def test_a_config_that_does_not_load_fails_and_the_rest_says_not_checked(tmp_path: Path) -> None:
    environ = doctor_environ(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text("poll_secs = 3\n")
    environ["POSTRUN_CONFIG"] = str(config)  # the default file's folder comes from the process
    checks = run_checks(
        DoctorInputs(environ=environ, config_file=None, overrides={}, platform="linux", runner=no_user_manager, uid=0)
    )
    by_name = {check.name: check for check in checks}
    assert by_name["config"].level == "fail"
    assert by_name["config"].detail == f"{config}: unknown key 'poll_secs'"
    assert by_name["store"].detail == "not checked: the configuration does not load"
    assert by_name["service"].level == "warn"
    assert exit_code(checks) == 78  # a configuration error, as for every command


def test_a_store_from_a_newer_postrun_exits_78_as_everywhere(tmp_path: Path) -> None:
    environ = doctor_environ(tmp_path)
    db = Path(environ["POSTRUN_DB"])
    with Database.open(db) as database:
        database.execute(f"pragma user_version = {STORE_VERSION + 1}")
    checks = run_checks(
        DoctorInputs(environ=environ, config_file=None, overrides={}, platform="linux", runner=no_user_manager, uid=0)
    )
    assert {check.name: check.level for check in checks}["store"] == "fail"
    assert exit_code(checks) == 78
