"""mirror_url: a libpq URI without a password, checked at load, masked when shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from postrun.errors import ConfigError
from postrun.exitcodes import ExitCode
from postrun.mirror.target import check_mirror_url, check_options, masked_url, mirror_target
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


def test_a_client_keys_passphrase_in_the_uri_is_refused_without_printing_it(tmp_path: Path) -> None:
    url = f"postgresql://alice@db.example.com/team?sslmode=verify-full&sslpassword={SECRET}"
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, POSTRUN_MIRROR_URL=url)
    assert caught.value.exit_code == ExitCode.CONFIG
    assert str(caught.value).startswith("POSTRUN_MIRROR_URL: mirror_url: a client key's passphrase (sslpassword)")
    assert SECRET not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("key", ["password", "sslpassword", "pass%77ord"])
def test_shown_uris_mask_every_secret_option(key: str) -> None:
    shown = masked_url(f"postgresql://alice@db/team?sslmode=require&{key}={SECRET}&application_name=x")
    assert shown == f"postgresql://***@db/team?sslmode=require&{key}=***&application_name=x"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://db:99999/team", "invalid port number '99999'"),
        ("postgresql://db:5432,db2:x/team", "invalid port number 'x'"),
        ("postgresql://db/team?port=0", "invalid port number '0'"),
        ("postgresql://db/team?sslmode=bogus", "invalid sslmode value 'bogus' (expected one of: disable, allow,"),
        ("postgresql://db/team?connect_timeout=soon", "invalid connect_timeout value 'soon' (expected a whole number)"),
        ("postgresql://db/team?target_session_attrs=rw", "invalid target_session_attrs value 'rw'"),
    ],
)
def test_option_values_libpq_refuses_are_configuration_errors(url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_options(mirror_target(url, "POSTRUN_MIRROR_URL"))
    assert caught.value.exit_code == ExitCode.CONFIG
    assert str(caught.value).startswith(f"POSTRUN_MIRROR_URL: mirror_url: {problem}")


def test_good_options_pass() -> None:
    for url in (
        "postgresql://a@h1:5432,h2:5433/team?target_session_attrs=read-write&sslmode=verify-full",
        "postgresql://a@[2001:db8::1]:6432/ops?connect_timeout=5&keepalives=1",
        "postgresql:///team?host=/var/run/postgresql",
    ):
        check_options(mirror_target(url))
