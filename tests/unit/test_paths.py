"""postrun.paths: every location from a fake HOME and XDG folders, and private folders."""

from __future__ import annotations

import os
import pwd
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import platformdirs
import pytest

from postrun.paths import Paths, ensure_private_dir, expand_path, home_dir
from postrun.settings import load_settings, paths_for


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "POSTRUN_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return home


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_fields_on_a_fake_home(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "store" / "p.db"
    paths = Paths.build({"HOME": str(home)}, db=db, cline_dir=tmp_path / "watched")
    assert paths.home == home
    assert paths.db == db
    assert paths.data_dir == tmp_path / "store"
    assert paths.capture_lock == tmp_path / "store" / "p.db.capture.lock"
    assert paths.cline_dir == tmp_path / "watched"
    assert paths.cline_default_sessions == home / ".cline" / "data" / "sessions"
    assert paths.config_file == platformdirs.user_config_path("postrun") / "config.toml"
    assert paths.config_file.is_relative_to(home)
    assert paths.log_dir == platformdirs.user_log_path("postrun")
    assert paths.log_dir.is_relative_to(home)
    assert paths.capture_log == paths.log_dir / "capture.log"
    assert paths.systemd_user_dir == home / ".config" / "systemd" / "user"
    assert paths.launch_agents_dir == home / "Library" / "LaunchAgents"


def test_xdg_folders(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = {name: str(tmp_path / name.lower()) for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME")}
    for name, value in xdg.items():
        monkeypatch.setenv(name, value)  # platformdirs reads the process environment
    paths = Paths.build({"HOME": str(home), **xdg}, db=tmp_path / "p.db", cline_dir=tmp_path)
    assert paths.systemd_user_dir == tmp_path / "xdg_config_home" / "systemd" / "user"
    if sys.platform.startswith("linux"):  # macOS uses ~/Library whatever XDG says
        assert paths.log_dir == tmp_path / "xdg_state_home" / "postrun" / "log"
        assert paths.config_file == tmp_path / "xdg_config_home" / "postrun" / "config.toml"


def test_relative_xdg_config_home_is_ignored(home: Path, tmp_path: Path) -> None:
    paths = Paths.build(
        {"HOME": str(home), "XDG_CONFIG_HOME": "relative/cfg"}, db=tmp_path / "p.db", cline_dir=tmp_path
    )
    assert paths.systemd_user_dir == home / ".config" / "systemd" / "user"


def test_bare_id_folder_ignores_every_cline_dir_setting(home: Path, tmp_path: Path) -> None:
    environ = {
        "HOME": str(home),
        "POSTRUN_CLINE_DIR": str(tmp_path / "watched"),
        "CLINE_SESSION_DATA_DIR": str(tmp_path / "s"),
        "CLINE_DATA_DIR": str(tmp_path / "d"),
    }
    loaded = load_settings(config_file=None, overrides={}, environ=environ)
    paths = paths_for(loaded, environ)
    assert paths.cline_dir == tmp_path / "watched"
    assert paths.cline_default_sessions == home / ".cline" / "data" / "sessions"


def test_config_file_is_the_one_the_settings_came_from(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "named.toml"
    config.write_text("poll_seconds = 4\n", encoding="utf-8")
    environ = {"HOME": str(home), "POSTRUN_CONFIG": str(config)}
    loaded = load_settings(config_file=None, overrides={}, environ=environ)
    assert paths_for(loaded, environ).config_file == config
    settings = loaded.settings
    assert Paths.build(environ, db=settings.db, cline_dir=settings.cline_dir).config_file == config


def test_home_comes_from_the_environment_else_the_account() -> None:
    account = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert home_dir({"HOME": "/somewhere/else"}) == Path("/somewhere/else")
    assert home_dir({}) == account
    assert home_dir({"HOME": "  "}) == account
    assert home_dir({"HOME": "~"}) == account


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("~", "/h"),
        ("~/a/b", "/h/a/b"),
        ("rel/x", "/base/rel/x"),
        ("/abs/x", "/abs/x"),
        ("a~/x", "/base/a~/x"),
    ],
)
def test_expand_path(raw: str, expected: str) -> None:
    assert expand_path(raw, home=Path("/h"), base=Path("/base")) == Path(expected)


# 0o277 even strips the owner's write bit from what mkdir asks for.
@pytest.fixture(params=[0o000, 0o022, 0o277], ids=oct)
def any_umask(request: pytest.FixtureRequest) -> Iterator[None]:
    previous = os.umask(request.param)
    try:
        yield
    finally:
        os.umask(previous)


def test_ensure_private_dir_creates_0700_whatever_the_umask(tmp_path: Path, any_umask: None) -> None:
    parent = tmp_path / "existing"
    parent.mkdir()
    parent.chmod(0o755)
    target = parent / "new" / "postrun"
    ensure_private_dir(target)
    assert target.is_dir()
    assert mode(target) == 0o700
    assert mode(parent / "new") == 0o700  # created by us
    assert mode(parent) == 0o755  # existed: not ours


def test_ensure_private_dir_leaves_an_existing_folder_alone(tmp_path: Path, any_umask: None) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # a store configured in /tmp must not chmod /tmp
    ensure_private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    ensure_private_dir(shared / "postrun")
    assert mode(shared / "postrun") == 0o700


def test_ensure_private_dir_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "postrun"
    target.write_text("", encoding="utf-8")
    with pytest.raises(NotADirectoryError):
        ensure_private_dir(target)
