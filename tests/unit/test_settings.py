"""postrun.settings: precedence, sources, errors and warnings, on real TOML files."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import platformdirs
import pydantic
import pytest

from postrun.errors import ConfigError, UsageError
from postrun.exitcodes import ExitCode
from postrun.ingest import ahead
from postrun.settings import SETTING_KEYS, ConfigValue, LoadedSettings, Settings, describe, load_settings


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home for the process too (platformdirs reads it), with no Postrun or Cline variables."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith(("POSTRUN_", "CLINE_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return home


def write_toml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load(
    home: Path,
    *,
    config_file: Path | None = None,
    overrides: dict[str, object] | None = None,
    **env: str,
) -> LoadedSettings:
    return load_settings(config_file=config_file, overrides=overrides or {}, environ={"HOME": str(home), **env})


def config_error(home: Path, **kwargs: Any) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(home, **kwargs)
    assert caught.value.exit_code == ExitCode.CONFIG
    return caught.value


# --- defaults ------------------------------------------------------------------------------


def test_defaults_without_file_or_variables(home: Path) -> None:
    loaded = load(home)
    s = loaded.settings
    assert s.db == platformdirs.user_data_path("postrun") / "postrun.db"
    assert s.db.is_relative_to(home)
    assert s.cline_dir == home / ".cline" / "data" / "sessions"
    assert (s.debounce_seconds, s.poll_seconds, s.full_sweep_minutes) == (2, 3, 5)
    assert (s.use_events, s.log_level, s.max_file_mb) == (True, "INFO", 512)
    assert loaded.config_path == platformdirs.user_config_path("postrun") / "config.toml"
    assert loaded.config_found is False
    assert dict(loaded.sources) == dict.fromkeys(SETTING_KEYS, "default")
    assert loaded.warnings == ()


def test_process_environment_is_not_read(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTRUN_POLL_SECONDS", "99")
    monkeypatch.setenv("CLINE_SESSION_DATA_DIR", "/elsewhere")
    s = load(home).settings
    assert s.poll_seconds == 3
    assert s.cline_dir == home / ".cline" / "data" / "sessions"


# --- precedence ----------------------------------------------------------------------------

LAYERS = ("file", "env", "flag")


@pytest.mark.parametrize("present", [combo for n in range(4) for combo in itertools.combinations(LAYERS, n)], ids=str)
def test_precedence_flag_over_env_over_file_over_default(home: Path, tmp_path: Path, present) -> None:
    given = {"file": 4.5, "env": 5.5, "flag": 6.5}
    config = write_toml(tmp_path / "c.toml", f"poll_seconds = {given['file']}\n" if "file" in present else "")
    env = {"POSTRUN_POLL_SECONDS": str(given["env"])} if "env" in present else {}
    overrides = {"poll_seconds": given["flag"] if "flag" in present else None}
    loaded = load(home, config_file=config, overrides=overrides, **env)
    winner = present[-1] if present else None
    assert loaded.settings.poll_seconds == (given[winner] if winner else 3)
    expected_source = {
        None: "default",
        "file": f"file {config}",
        "env": "env POSTRUN_POLL_SECONDS",
        "flag": "flag",
    }[winner]
    assert loaded.sources["poll_seconds"] == expected_source
    assert loaded.config_found is True


def test_layers_merge_key_by_key(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", 'debounce_seconds = 1.5\nlog_level = "warning"\nuse_events = true\n')
    loaded = load(
        home,
        config_file=config,
        overrides={"log_level": "error", "max_file_mb": None},
        POSTRUN_USE_EVENTS="0",
        POSTRUN_MAX_FILE_MB="64",
    )
    s = loaded.settings
    assert (s.debounce_seconds, s.log_level, s.use_events, s.max_file_mb) == (1.5, "ERROR", False, 64)
    assert loaded.sources["debounce_seconds"] == f"file {config}"
    assert loaded.sources["log_level"] == "flag"
    assert loaded.sources["use_events"] == "env POSTRUN_USE_EVENTS"
    assert loaded.sources["max_file_mb"] == "env POSTRUN_MAX_FILE_MB"
    assert loaded.sources["poll_seconds"] == "default"


@pytest.mark.parametrize(("text", "expected"), [("0", False), ("false", False), ("1", True), ("true", True)])
def test_use_events_from_environment(home: Path, text: str, expected: bool) -> None:
    assert load(home, POSTRUN_USE_EVENTS=text).settings.use_events is expected


def test_log_level_is_case_insensitive(home: Path) -> None:
    assert load(home, POSTRUN_LOG_LEVEL="debug").settings.log_level == "DEBUG"


def test_blank_variable_counts_as_unset(home: Path) -> None:
    loaded = load(home, POSTRUN_POLL_SECONDS="  ", POSTRUN_DB="")
    assert loaded.settings.poll_seconds == 3
    assert loaded.sources["db"] == "default"


def test_unknown_override_key_is_a_programming_error(home: Path) -> None:
    with pytest.raises(ValueError, match="poll_secs"):
        load(home, overrides={"poll_secs": 1})


# --- the configuration file ----------------------------------------------------------------


def test_postrun_config_names_the_file(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "etc" / "p.toml", "max_file_mb = 7\n")
    loaded = load(home, POSTRUN_CONFIG=str(config))
    assert (loaded.config_path, loaded.config_found) == (config, True)
    assert loaded.settings.max_file_mb == 7
    assert loaded.warnings == ()  # POSTRUN_CONFIG is not an unknown setting


def test_explicit_config_wins_over_postrun_config(home: Path, tmp_path: Path) -> None:
    explicit = write_toml(tmp_path / "a.toml", "max_file_mb = 1\n")
    named = write_toml(tmp_path / "b.toml", "max_file_mb = 2\n")
    loaded = load(home, config_file=explicit, POSTRUN_CONFIG=str(named))
    assert (loaded.config_path, loaded.settings.max_file_mb) == (explicit, 1)


def test_default_config_file_is_read_when_present(home: Path) -> None:
    default = platformdirs.user_config_path("postrun") / "config.toml"
    assert default.is_relative_to(home)
    write_toml(default, "full_sweep_minutes = 10\n")
    loaded = load(home)
    assert (loaded.config_path, loaded.config_found) == (default, True)
    assert loaded.settings.full_sweep_minutes == 10
    assert loaded.sources["full_sweep_minutes"] == f"file {default}"


def test_config_path_expands_tilde_against_injected_home(home: Path) -> None:
    config = write_toml(home / "p.toml", "poll_seconds = 8\n")
    assert load(home, config_file=Path("~/p.toml")).config_path == config
    assert load(home, POSTRUN_CONFIG="~/p.toml").settings.poll_seconds == 8


# --- paths ---------------------------------------------------------------------------------


def test_tilde_expands_against_the_injected_home(home: Path, tmp_path: Path) -> None:
    other_home = tmp_path / "other-home"  # not the process HOME: proves the injected one is used
    config = write_toml(tmp_path / "c.toml", 'db = "~/file.db"\n')
    loaded = load_settings(
        config_file=config,
        overrides={},
        environ={"HOME": str(other_home), "POSTRUN_CLINE_DIR": "~/sessions"},
    )
    assert loaded.settings.db == other_home / "file.db"
    assert loaded.settings.cline_dir == other_home / "sessions"
    flagged = load_settings(config_file=None, overrides={"db": Path("~/flag.db")}, environ={"HOME": str(other_home)})
    assert flagged.settings.db == other_home / "flag.db"


def test_relative_paths_resolve_against_the_file_folder_or_working_directory(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "etc" / "c.toml", 'db = "data/p.db"\n')
    assert load(home, config_file=config).settings.db == tmp_path / "etc" / "data" / "p.db"
    # the fixture made tmp_path the working directory
    assert load(home, POSTRUN_DB="rel.db").settings.db == tmp_path / "rel.db"
    assert load(home, overrides={"db": "flag.db"}).settings.db == tmp_path / "flag.db"


@pytest.mark.parametrize(
    ("variables", "expected", "source"),
    [
        ({}, "HOME/.cline/data/sessions", "default"),
        ({"CLINE_DIR": "/c"}, "/c/data/sessions", "default, from CLINE_DIR"),
        ({"CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d"}, "/d/sessions", "default, from CLINE_DATA_DIR"),
        (
            {"CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d", "CLINE_SESSION_DATA_DIR": "/s"},
            "/s",
            "default, from CLINE_SESSION_DATA_DIR",
        ),
        ({"CLINE_SESSION_DATA_DIR": "  ", "CLINE_DATA_DIR": " /d "}, "/d/sessions", "default, from CLINE_DATA_DIR"),
        (
            {"CLINE_SESSION_DATA_DIR": "", "CLINE_DATA_DIR": "", "CLINE_DIR": " "},
            "HOME/.cline/data/sessions",
            "default",
        ),
    ],
)
def test_cline_dir_default_follows_clines_chain(home: Path, variables, expected: str, source: str) -> None:
    loaded = load(home, **variables)
    assert loaded.settings.cline_dir == Path(expected.replace("HOME", str(home)))
    assert loaded.sources["cline_dir"] == source


def test_postrun_cline_dir_beats_clines_variables(home: Path, tmp_path: Path) -> None:
    loaded = load(home, POSTRUN_CLINE_DIR=str(tmp_path / "w"), CLINE_SESSION_DATA_DIR="/s")
    assert loaded.settings.cline_dir == tmp_path / "w"
    assert loaded.sources["cline_dir"] == "env POSTRUN_CLINE_DIR"


# --- errors --------------------------------------------------------------------------------


def test_unknown_key_in_file(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "poll_secs = 3\n")
    error = config_error(home, config_file=config)
    assert (error.where, error.reason) == (str(config), "unknown key 'poll_secs'")


def test_table_in_file_is_an_unknown_key(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "[capture]\npoll_seconds = 3\n")
    assert config_error(home, config_file=config).reason == "unknown key 'capture'"


def test_toml_syntax_error_names_the_file(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "poll_seconds = = 3\n")
    error = config_error(home, config_file=config)
    assert error.where == str(config)
    assert error.reason.startswith("invalid TOML: ")
    assert "line 1" in error.reason


def test_non_utf8_file(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_bytes(b'log_level = "\xff"\n')
    error = config_error(home, config_file=config)
    assert (error.where, error.reason) == (str(config), "invalid TOML: not UTF-8 text")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('poll_seconds = "abc"', "poll_seconds: expected a number (got 'abc')"),
        ('poll_seconds = "3"', "poll_seconds: expected a number (got '3')"),  # the file is typed
        ("debounce_seconds = -1", "debounce_seconds: must be greater than 0 (got -1)"),
        ("full_sweep_minutes = 0", "full_sweep_minutes: must be greater than 0 (got 0)"),
        ("full_sweep_minutes = inf", "full_sweep_minutes: expected a finite number (got inf)"),
        ("raw_copy_seconds = -5", "raw_copy_seconds: must be greater than or equal to 0 (got -5)"),
        # A year at most: past ~292 years the waits and datetimes they feed overflow.
        ("poll_seconds = 1e10", "poll_seconds: must be less than or equal to 31536000 (got 10000000000.0)"),
        ("debounce_seconds = 31536001", "debounce_seconds: must be less than or equal to 31536000 (got 31536001)"),
        ("full_sweep_minutes = 1e9", "full_sweep_minutes: must be less than or equal to 525600 (got 1000000000.0)"),
        ("raw_copy_seconds = 1e12", "raw_copy_seconds: must be less than or equal to 31536000 (got 1000000000000.0)"),
        ("ingest_processes = -1", "ingest_processes: must be greater than or equal to 0 (got -1)"),
        ("ingest_processes = 2.5", "ingest_processes: expected a whole number (got 2.5)"),
        ("max_file_mb = 1.5", "max_file_mb: expected a whole number (got 1.5)"),
        ('use_events = "no"', "use_events: expected true or false (got 'no')"),
        ('log_level = "trace"', "log_level: expected 'DEBUG', 'INFO', 'WARNING' or 'ERROR' (got 'trace')"),
        ("db = 5", "db: expected a path (got 5)"),
        ('db = ""', "db: expected a path, not an empty string (got '')"),
    ],
)
def test_bad_value_in_file(home: Path, tmp_path: Path, text: str, reason: str) -> None:
    config = write_toml(tmp_path / "c.toml", text + "\n")
    error = config_error(home, config_file=config)
    assert (error.where, error.reason) == (str(config), reason)


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("POSTRUN_POLL_SECONDS", "abc", "poll_seconds: expected a number (got 'abc')"),
        ("POSTRUN_DEBOUNCE_SECONDS", "-1", "debounce_seconds: must be greater than 0 (got '-1')"),
        ("POSTRUN_MAX_FILE_MB", "1.5", "max_file_mb: expected a whole number (got '1.5')"),
        ("POSTRUN_USE_EVENTS", "maybe", "use_events: expected true or false (got 'maybe')"),
        ("POSTRUN_INGEST_PROCESSES", "many", "ingest_processes: expected a whole number (got 'many')"),
    ],
)
def test_bad_value_in_environment_names_the_variable(home: Path, variable: str, value: str, reason: str) -> None:
    error = config_error(home, **{variable: value})
    assert (error.where, error.reason) == (variable, reason)


def test_a_bad_flag_is_a_usage_error_naming_the_flag(home: Path) -> None:
    with pytest.raises(UsageError) as caught:
        load(home, overrides={"poll_seconds": -2.0})
    assert (caught.value.where, caught.value.reason) == ("--poll-seconds", "must be greater than 0 (got -2.0)")
    assert caught.value.exit_code == 2
    with pytest.raises(UsageError) as caught:
        load(home, overrides={"full_sweep_minutes": "soon"})
    assert caught.value.where == "--full-sweep-minutes"


def test_error_names_the_source_of_the_bad_value_not_another(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "poll_seconds = 4\n")
    error = config_error(home, config_file=config, POSTRUN_POLL_SECONDS="x")
    assert error.where == "POSTRUN_POLL_SECONDS"
    with pytest.raises(UsageError) as caught:
        load(home, config_file=config, POSTRUN_POLL_SECONDS="5", overrides={"poll_seconds": "y"})
    assert caught.value.where == "--poll-seconds"


def test_bad_file_value_is_reported_even_when_overridden(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "poll_seconds = -4\n")
    error = config_error(home, config_file=config, POSTRUN_POLL_SECONDS="5")
    assert error.where == str(config)


def test_missing_explicit_config(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    error = config_error(home, config_file=missing)
    assert (error.where, error.reason) == (str(missing), "config file not found (from --config)")


def test_missing_postrun_config(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    error = config_error(home, POSTRUN_CONFIG=str(missing))
    assert (error.where, error.reason) == (str(missing), "config file not found (from POSTRUN_CONFIG)")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_config(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "poll_seconds = 4\n")
    config.chmod(0)
    error = config_error(home, config_file=config)
    assert error.where == str(config)
    assert error.reason.startswith("cannot read config file: ")


def test_config_that_is_a_folder(home: Path, tmp_path: Path) -> None:
    error = config_error(home, POSTRUN_CONFIG=str(tmp_path))
    assert error.where == str(tmp_path)
    assert error.reason.startswith("cannot read config file: ")


# --- warnings ------------------------------------------------------------------------------


def test_unknown_postrun_variable_is_one_warning_each(home: Path) -> None:
    loaded = load(home, POSTRUN_FOO="1", POSTRUN_POLL_SECS="3", POSTRUN_CONFIG="", OTHER_THING="x")
    assert loaded.warnings == (
        "POSTRUN_FOO: unknown setting, ignored",
        "POSTRUN_POLL_SECS: unknown setting, ignored",
    )
    assert loaded.settings.poll_seconds == 3


# --- describe ------------------------------------------------------------------------------


def test_describe_lists_every_key_with_value_and_source(home: Path, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "debounce_seconds = 0.25\n")
    loaded = load(
        home,
        config_file=config,
        overrides={"use_events": False},
        POSTRUN_DB=str(tmp_path / "x.db"),
        CLINE_DATA_DIR=str(tmp_path / "cl"),
    )
    rows = describe(loaded)
    assert [row.key for row in rows] == list(SETTING_KEYS)
    assert list(SETTING_KEYS) == [
        "db",
        "cline_dir",
        "claude_dir",
        "codex_dir",
        "debounce_seconds",
        "poll_seconds",
        "use_events",
        "log_level",
        "full_sweep_minutes",
        "max_file_mb",
        "keep_raw",
        "raw_copy_seconds",
        "ingest_processes",
        "mirror_url",
        "mirror_redact",
        "exclude",
        "agents",
        "otel_endpoint",
        "otel_headers",
    ]
    by_key = {row.key: row for row in rows}
    assert by_key["db"] == ConfigValue("db", str(tmp_path / "x.db"), "env POSTRUN_DB")
    assert by_key["cline_dir"] == ConfigValue(
        "cline_dir", str(tmp_path / "cl" / "sessions"), "default, from CLINE_DATA_DIR"
    )
    assert by_key["debounce_seconds"] == ConfigValue("debounce_seconds", "0.25", f"file {config}")
    assert by_key["poll_seconds"] == ConfigValue("poll_seconds", "3", "default")
    assert by_key["use_events"] == ConfigValue("use_events", "false", "flag")
    assert by_key["log_level"] == ConfigValue("log_level", "INFO", "default")
    assert by_key["max_file_mb"] == ConfigValue("max_file_mb", "512", "default")
    assert by_key["keep_raw"] == ConfigValue("keep_raw", "true", "default")
    assert by_key["raw_copy_seconds"] == ConfigValue("raw_copy_seconds", "300", "default")


# --- the model itself ----------------------------------------------------------------------


def test_settings_are_frozen(tmp_path: Path) -> None:
    s = Settings(db=tmp_path / "p.db", cline_dir=tmp_path)
    with pytest.raises(pydantic.ValidationError):
        s.poll_seconds = 1  # type: ignore[misc]


def test_settings_built_in_code_need_absolute_paths(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match="must be an absolute path"):
        Settings(db=Path("p.db"), cline_dir=tmp_path)
    with pytest.raises(pydantic.ValidationError, match="must be an absolute path"):
        Settings(db=tmp_path / "p.db", cline_dir=Path("~/sessions"))


def test_a_relative_home_is_a_configuration_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file=None, overrides={"db": tmp_path / "p.db"}, environ={"HOME": "relhome"})
    assert str(caught.value) == "HOME: must be an absolute path (got 'relhome')"
    assert caught.value.exit_code == ExitCode.CONFIG


def test_the_ingest_processes_started_ahead_read_the_settings_own_variable() -> None:
    # ``postrun.ingest.ahead`` reads the variable before the settings are loaded, by its name.
    prefix = Settings.model_config.get("env_prefix", "")
    assert "ingest_processes" in Settings.model_fields
    assert f"{prefix}ingest_processes".upper() == ahead.PROCESSES_VARIABLE
