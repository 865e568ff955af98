"""mirror_url: a libpq URI without a password, checked at load, masked when shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from postrun.errors import ConfigError
from postrun.exitcodes import ExitCode
from postrun.mirror.target import check_mirror_url, masked_url, mirror_target
from postrun.settings import describe, load_settings

SECRET = "s3cr3t-pw"


def load(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    return load_settings(config_file=None, overrides={}, environ={"HOME": str(tmp_path), **env})


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("postgresql://alice@db.example.com:5432/team", "db.example.com/team"),
        ("postgres://db.example.com/team?sslmode=verify-full", "db.example.com/team"),
        ("postgresql://alice@[2001:db8::1]:6432/ops", "2001:db8::1/ops"),
        ("postgresql://alice@h1:5432,h2:5433/team?target_session_attrs=read-write", "h1/team"),
        ("postgresql:///team?host=/var/run/postgresql", "/var/run/postgresql/team"),
        ("postgresql://alice@db.example.com", "db.example.com/alice"),
        ("postgresql://", "localhost/(default)"),
    ],
)
def test_target_label_names_the_first_host_and_the_database(url: str, label: str) -> None:
    assert check_mirror_url(url) == url
    assert mirror_target(url).label == label


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://alice:{SECRET}@db.example.com/team",
        f"postgresql://alice:{SECRET}@db.example.com",
        f"postgresql://db.example.com/team?sslmode=require&password={SECRET}",
    ],
)
def test_a_password_in_the_uri_is_refused_without_printing_it(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, POSTRUN_MIRROR_URL=url)
    message = str(caught.value)
    assert caught.value.exit_code == ExitCode.CONFIG
    assert message.startswith("POSTRUN_MIRROR_URL: mirror_url: a password in the URI is refused")
    assert SECRET not in message and "\n" not in message


def test_the_config_file_is_named_and_the_value_never_shown(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'mirror_url = "postgresql://bob:{SECRET}@db/team"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file=config, overrides={}, environ={"HOME": str(tmp_path)})
    assert str(caught.value).startswith(f"{config}: mirror_url: a password in the URI is refused")
    assert SECRET not in str(caught.value)


def test_not_a_uri_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mirror_url: expected a libpq URI"):
        load(tmp_path, POSTRUN_MIRROR_URL="host=db dbname=team")


def test_config_show_masks_the_user_info(tmp_path: Path) -> None:
    loaded = load(tmp_path, POSTRUN_MIRROR_URL="postgresql://alice@db.example.com:5432/team")
    shown = {row.key: row for row in describe(loaded)}["mirror_url"]
    assert shown.value == "postgresql://***@db.example.com:5432/team"
    assert shown.source == "env POSTRUN_MIRROR_URL"
    assert masked_url("postgresql://db/team") == "postgresql://db/team"


def test_no_mirror_by_default(tmp_path: Path) -> None:
    loaded = load(tmp_path)
    assert loaded.settings.mirror_url is None
    assert {row.key: row.value for row in describe(loaded)}["mirror_url"] == "(not set)"
