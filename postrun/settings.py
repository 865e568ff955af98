"""The one settings object every command uses, and where each value came from.

Precedence, highest first: command-line flags, ``POSTRUN_*`` variables, the TOML file,
defaults. The layering is done here rather than by pydantic-settings' own sources so that
the environment is injected (tests and the service control it), every value is checked
against the source that gave it, and an error names that source: the file, the variable
(``POSTRUN_POLL_SECONDS``) or the flag (``--poll-seconds``).

Decisions the precedence alone does not settle:
- Every source is checked, even a value a higher source overrides: a broken file is
  reported now, not the day the override goes away.
- The file is read strictly (``poll_seconds = "3"`` is a wrong type: TOML has numbers);
  variables and flags are text, so they are converted.
- A blank ``POSTRUN_*`` variable counts as unset, as Cline's own variables do.
- A relative path resolves against the file's folder when it comes from the file, and
  against the working directory when it comes from a variable or a flag.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, TypeAdapter, ValidationError, ValidationInfo
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from postrun.agents.registry import KINDS, check_kinds
from postrun.errors import ConfigError, UsageError
from postrun.jsonio import MAX_FILE_MB
from postrun.mirror.target import check_mirror_url, masked_url
from postrun.otel.target import check_endpoint, masked_headers, shown_endpoint
from postrun.paths import (
    CONFIG_VARIABLE,
    Paths,
    cline_sessions_root,
    config_file_location,
    default_db_path,
    env_value,
    expand_path,
    home_dir,
    working_dir,
)

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]

# ``POSTRUN_*`` variables that are not settings and must not draw an "unknown" warning.
NON_SETTING_VARIABLES = frozenset({CONFIG_VARIABLE})


@dataclass(frozen=True)
class _PathContext:
    """How a source's path values are completed: ``~`` against ``home``, relative against ``base``."""

    home: Path
    base: Path | None  # None: the working directory was removed


def _complete_path(value: object, info: ValidationInfo) -> object:
    if isinstance(info.context, _PathContext) and isinstance(value, str | Path):
        if not str(value).strip():
            raise ValueError("expected a path, not an empty string")
        # TOML can spell one (\u0000), no file name holds one: refused here, not at the first open.
        if "\0" in str(value):
            raise ValueError("a path cannot contain a NUL character")
        return expand_path(value, home=info.context.home, base=info.context.base)
    return value


def _require_absolute(path: Path) -> Path:
    # Reached without a context only when code builds Settings itself: it must say what it means.
    if not path.is_absolute():
        raise ValueError("must be an absolute path")
    return path


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


def _agent_list(value: object) -> object:
    """A TOML list, or a variable's comma-separated kinds (``cline,claude-code``)."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return tuple(value) if isinstance(value, list) else value


def _known_agents(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        raise ValueError("name at least one agent")
    return tuple(dict.fromkeys(check_kinds(value)))


def _glob_list(value: object) -> object:
    """A TOML list, or a variable's path list (``:``-separated, like PATH)."""
    if isinstance(value, str):
        return tuple(part for part in value.split(os.pathsep) if part)
    return tuple(value) if isinstance(value, list) else value


# The longest wait a timing setting may ask for: far longer ones overflowed a poll's timeout
# or dated a copy before year 1 (a traceback); nobody means more than a year.
YEAR_SECONDS = 365 * 24 * 3600

AbsolutePath = Annotated[Path, BeforeValidator(_complete_path), AfterValidator(_require_absolute)]
Seconds = Annotated[float, Field(gt=0, le=YEAR_SECONDS, allow_inf_nan=False)]
MirrorUrl = Annotated[str, AfterValidator(check_mirror_url)]
OtelEndpoint = Annotated[str, AfterValidator(check_endpoint)]

# Values shown masked, in ``config show`` and in errors: a URI's user-info is nobody's business.
_MASKED: dict[str, Callable[[str], str]] = {
    "mirror_url": masked_url,
    "otel_endpoint": shown_endpoint,
    "otel_headers": masked_headers,
}


class Settings(BaseSettings):
    """Validated, frozen settings. Build it with :func:`load_settings`.

    ``db`` and ``cline_dir`` have no model default because theirs depend on the environment;
    ``load_settings`` supplies them (``<user data dir>/postrun.db`` and Cline's own sessions
    root). Code that builds ``Settings`` directly (tests) must pass absolute paths.
    """

    model_config = SettingsConfigDict(env_prefix="POSTRUN_", extra="forbid", frozen=True)

    db: AbsolutePath
    cline_dir: AbsolutePath  # the sessions root the capture watches
    # Claude Code's projects folder; None: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects.
    claude_dir: AbsolutePath | None = None
    # Codex's sessions folder; None: $CODEX_HOME/sessions, else ~/.codex/sessions.
    codex_dir: AbsolutePath | None = None
    debounce_seconds: Seconds = 2
    poll_seconds: Seconds = 3
    use_events: bool = True  # False: polls only (network file systems)
    log_level: Annotated[LogLevel, BeforeValidator(_upper)] = "INFO"
    full_sweep_minutes: Annotated[float, Field(gt=0, le=YEAR_SECONDS // 60, allow_inf_nan=False)] = 5
    max_file_mb: Annotated[int, Field(gt=0)] = MAX_FILE_MB
    keep_raw: bool = True  # False: no raw copies of the agent's files (records only)
    # A session being written is copied to the vault at most this often (0: at every ingest).
    raw_copy_seconds: Annotated[float, Field(ge=0, le=YEAR_SECONDS, allow_inf_nan=False)] = 300
    # Ingest processes preparing a batched ingest of many sessions, `postrun ingest`'s or capture's start-up catch-up
    # (None: one fewer than the CPUs; 0: none).
    ingest_processes: Annotated[int, Field(ge=0, le=64)] | None = None
    mirror_url: MirrorUrl | None = None  # the team mirror (PostgreSQL); None: no mirror
    mirror_redact: bool = True  # False: the mirror gets records as stored, secrets in clear
    # Workspace roots (globs) whose sessions are never recorded.
    exclude: Annotated[tuple[str, ...], BeforeValidator(_glob_list)] = ()
    # The agents capture watches (every registered one by default), in the registry's order.
    agents: Annotated[tuple[str, ...], BeforeValidator(_agent_list), AfterValidator(_known_agents)] = KINDS
    # `postrun otel push`: the OTLP/HTTP traces URL and headers (k=v,k2=v2); None: the OTEL_* variables.
    otel_endpoint: OtelEndpoint | None = None
    otel_headers: str | None = None

    @property
    def max_bytes(self) -> int:
        """``max_file_mb`` in bytes: larger source files are refused."""
        return self.max_file_mb * 2**20

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings layers the sources itself; the process environment is never read.
        return (init_settings,)


SETTING_KEYS: tuple[str, ...] = tuple(Settings.model_fields)
ENV_PREFIX = Settings.model_config["env_prefix"]

# One validator per key, with the field's constraints, so each source's value is checked alone.
_VALIDATORS: dict[str, TypeAdapter[Any]] = {
    key: TypeAdapter(field.rebuild_annotation()) for key, field in Settings.model_fields.items()
}


def env_variable(key: str) -> str:
    """The variable that sets ``key``: ``poll_seconds`` -> ``POSTRUN_POLL_SECONDS``."""
    return ENV_PREFIX + key.upper()


def flag_name(key: str) -> str:
    """The command-line flag that sets ``key``, as errors name it: ``--poll-seconds``."""
    return "--" + key.replace("_", "-")


@dataclass(frozen=True)
class LoadedSettings:
    settings: Settings
    config_path: Path  # the file consulted (it may be missing when it is the default one)
    config_found: bool
    sources: Mapping[str, str]  # key -> "flag", "env POSTRUN_X", "file <path>", "default", "default, from VAR"
    warnings: tuple[str, ...]  # one line each, for the CLI to print as ``warning: ...``
    # key -> the file, variable or flag that set it, as errors name it (no entry: the default)
    set_in: Mapping[str, str] = field(default_factory=dict)


def paths_for(loaded: LoadedSettings, environ: Mapping[str, str]) -> Paths:
    """The paths of a command run with these settings (and the file they were read from)."""
    settings = loaded.settings
    return Paths.build(environ, db=settings.db, cline_dir=settings.cline_dir, config_file=loaded.config_path)


@dataclass(frozen=True)
class ConfigValue:
    key: str
    value: str  # for display
    source: str


@dataclass(frozen=True)
class _Source:
    """One layer of values: how to name it in ``sources`` and in errors, and how to check it."""

    values: Mapping[str, object]
    describe: Mapping[str, str]  # key -> the source as ``config show`` names it
    where: Mapping[str, str]  # key -> the file, variable or flag an error names
    paths: _PathContext
    strict: bool
    flags: bool = False  # a bad command-line value is a usage error (exit 2), not a configuration one


def load_settings(
    *, config_file: Path | None, overrides: Mapping[str, object], environ: Mapping[str, str]
) -> LoadedSettings:
    """Settings from flags (``overrides``; None values are "not given"), ``POSTRUN_*`` variables
    in ``environ``, the TOML file and defaults, highest first.

    ``config_file`` is ``--config``; without it ``POSTRUN_CONFIG``, else the default file in
    the user config folder. Raises ``ConfigError`` (exit 78) naming the file, variable or flag
    for a missing named file, an unreadable file, invalid TOML, an unknown key or a bad value.
    ``overrides`` keys must be setting names (``SETTING_KEYS``); any other is a bug
    (``ValueError``).
    """
    unknown = sorted(set(overrides) - set(SETTING_KEYS))
    if unknown:
        raise ValueError(f"not a setting: {', '.join(unknown)}")
    cwd = working_dir()  # None: removed, and then only a relative path is refused
    home = home_dir(environ)
    config_path, named_by = config_file_location(config_file, environ, base=cwd)
    file_values = _read_config_file(config_path, named_by)
    file_table = file_values or {}
    env_values, warnings = _environment_settings(environ)
    flag_values = {key: value for key, value in overrides.items() if value is not None}

    cline_dir, cline_variable = cline_sessions_root(environ, base=cwd)
    values: dict[str, Any] = {"db": default_db_path(), "cline_dir": cline_dir}
    sources = dict.fromkeys(SETTING_KEYS, "default")
    set_in: dict[str, str] = {}
    if cline_variable is not None:
        sources["cline_dir"] = f"default, from {cline_variable}"

    layers = (
        _Source(
            values=file_table,
            describe=dict.fromkeys(file_table, f"file {config_path}"),
            where=dict.fromkeys(file_table, str(config_path)),
            paths=_PathContext(home=home, base=config_path.parent),
            strict=True,
        ),
        _Source(
            values=env_values,
            describe={key: f"env {env_variable(key)}" for key in env_values},
            where={key: env_variable(key) for key in env_values},
            paths=_PathContext(home=home, base=cwd),
            strict=False,
        ),
        _Source(
            values=flag_values,
            describe=dict.fromkeys(flag_values, "flag"),
            where={key: flag_name(key) for key in flag_values},
            paths=_PathContext(home=home, base=cwd),
            strict=False,
            flags=True,
        ),
    )
    for layer in layers:  # lowest precedence first, so a higher source overwrites
        for key, raw in layer.values.items():
            values[key] = _check(key, raw, layer)
            sources[key] = layer.describe[key]
            set_in[key] = layer.where[key]
    return LoadedSettings(
        settings=Settings(**values),
        config_path=config_path,
        config_found=file_values is not None,
        sources=MappingProxyType(sources),
        warnings=warnings,
        set_in=MappingProxyType(set_in),
    )


def describe(loaded: LoadedSettings) -> list[ConfigValue]:
    """Every setting with its effective value and source, in declaration order (``config show``)."""
    return [
        ConfigValue(key=key, value=_display(key, getattr(loaded.settings, key)), source=loaded.sources[key])
        for key in SETTING_KEYS
    ]


def _read_config_file(path: Path, named_by: str | None) -> dict[str, object] | None:
    """The file's settings; None when the default file does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if named_by is None:
            return None
        raise ConfigError(str(path), f"config file not found (from {named_by})") from None
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read config file: {exc.strerror}") from None
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(str(path), "invalid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message has the position but not the file: the error's ``where`` adds it.
        raise ConfigError(str(path), f"invalid TOML: {exc}") from None
    for key in table:
        if key not in SETTING_KEYS:
            raise ConfigError(str(path), f"unknown key {key!r}")
    return table


def _environment_settings(environ: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The settings given by ``POSTRUN_*`` variables, and a warning per unknown variable."""
    values: dict[str, str] = {}
    warnings: list[str] = []
    variables = {env_variable(key): key for key in SETTING_KEYS}
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX):
            continue
        if name in variables:
            value = env_value(environ, name)
            if value is not None:
                values[variables[name]] = value
        elif name not in NON_SETTING_VARIABLES:
            warnings.append(f"{name}: unknown setting, ignored")
    return values, tuple(warnings)


def _check(key: str, raw: object, source: _Source) -> object:
    try:
        return _VALIDATORS[key].validate_python(raw, strict=source.strict, context=source.paths)
    except ValidationError as exc:
        problem = _reason(exc.errors(include_url=False)[0])
        # A masked value may hold a password (the usual reason it is refused): never echo it.
        got = "" if key in _MASKED else f" (got {_shown(raw)})"
        if source.flags:  # the flag names the setting already
            raise UsageError(source.where[key], f"{problem}{got}") from None
        raise ConfigError(source.where[key], f"{key}: {problem}{got}") from None


def _reason(error: ErrorDetails) -> str:
    """A short reason in our words; pydantic's own is long and speaks of "Input"."""
    kind = error["type"]
    context = error.get("ctx", {})
    if kind in {"float_type", "float_parsing"}:
        return "expected a number"
    if kind in {"int_type", "int_parsing", "int_from_float"}:
        return "expected a whole number"
    if kind in {"bool_type", "bool_parsing"}:
        return "expected true or false"
    if kind == "finite_number":
        return "expected a finite number"
    if kind == "greater_than":
        return f"must be greater than {context['gt']:g}"
    if kind == "literal_error":
        return f"expected {context['expected']}"
    if kind in {"path_type", "is_instance_of"}:
        return "expected a path"
    if kind == "value_error":
        return str(context["error"])
    return error["msg"].replace("Input should be", "must be")


def _shown(raw: object) -> str:
    return repr(str(raw)) if isinstance(raw, Path) else repr(raw)


def _display(key: str, value: object) -> str:
    if key in _MASKED and isinstance(value, str):
        return _MASKED[key](value)
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{item}"' for item in value) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return os.fspath(value) if isinstance(value, Path) else str(value)
