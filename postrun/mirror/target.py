"""The mirror's target as ``mirror_url`` gives it: a libpq connection URI, never with a secret.

Passwords come from libpq's own means (``~/.pgpass``, ``PGPASSFILE``, a service file), so the
URI can be shown, logged and kept in a config file. This module does not need psycopg.

Two checks, at two moments: when the settings load, a secret in the URI is refused (every
command then stops, as for any leaked credential); when the mirror is used, the options are
checked (``check_options``: values with a fixed form here, unknown names by libpq itself), so
that a typo in one option is a configuration error of the mirror alone, never an outage.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

from postrun.errors import ConfigError

_SCHEMES = ("postgresql://", "postgres://")
_PASSWORD_HINT = "use ~/.pgpass, PGPASSFILE or a service file for the password"
# The query parameters that hold a secret: refused when the settings load, masked when shown.
SECRET_OPTIONS = ("password", "sslpassword")
# Values libpq accepts for the options whose values it checks before connecting.
_CHOICES = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby", "prefer-standby"),
    "load_balance_hosts": ("disable", "random"),
}
_INTEGERS = (
    "connect_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
)


def check_mirror_url(url: str) -> str:
    """``url`` when it is a libpq URI without a secret; ValueError (never quoting it) otherwise."""
    url = url.strip()
    if not url.startswith(_SCHEMES):
        raise ValueError("expected a libpq URI: postgresql://[user@]host[:port]/database[?options]")
    netloc, options = _netloc(url), _options(url)
    user_info, at, _ = netloc.rpartition("@")
    if (at and ":" in user_info) or "password" in options:
        raise ValueError(f"a password in the URI is refused: {_PASSWORD_HINT}")
    if "sslpassword" in options:
        raise ValueError(
            "a client key's passphrase (sslpassword) in the URI is refused:"
            " put it in a service file (PGSERVICEFILE, mode 0600) and name the service in the URI"
        )
    return url


def masked_url(url: str) -> str:
    """``url`` with its user-info and every secret option's value replaced by ``***``
    (what ``config show``, ``mirror status`` and ``doctor`` print)."""
    scheme, _, rest = url.partition("://")
    netloc = _netloc(url)
    _, at, hosts = netloc.rpartition("@")
    path, question, query = rest[len(netloc) :].partition("?")
    pieces = []
    for piece in query.split("&") if question else ():
        key, equals, _ = piece.partition("=")
        pieces.append(f"{key}=***" if equals and unquote(key) in SECRET_OPTIONS else piece)
    return f"{scheme}://{'***@' if at else ''}{hosts}{path}{question}{'&'.join(pieces)}"


@dataclass(frozen=True, slots=True)
class MirrorTarget:
    url: str
    host: str
    database: str
    set_in: str = "mirror_url"  # the file, variable or flag that gave the URI (errors name it)

    @property
    def label(self) -> str:
        """``<host>/<database>``: how log lines and commands name the mirror."""
        return f"{self.host}/{self.database}"

    @property
    def shown_url(self) -> str:
        return masked_url(self.url)

    def config_error(self, problem: str) -> ConfigError:
        where = self.set_in if self.set_in != "mirror_url" else ""
        return ConfigError(where, f"mirror_url: {problem}")


def mirror_target(url: str, set_in: str = "mirror_url") -> MirrorTarget:
    netloc, options = _netloc(url), _options(url)
    user_info, _, hosts = netloc.rpartition("@")
    host = unquote(hosts.split(",")[0])
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    host = options.get("host", host) or "localhost"
    path = url.partition("://")[2][len(netloc) :].partition("?")[0]
    database = unquote(path.lstrip("/")) or options.get("dbname", "") or unquote(user_info) or "(default)"
    return MirrorTarget(url=url, host=host.split(",")[0], database=database, set_in=set_in or "mirror_url")


def check_options(target: MirrorTarget) -> None:
    """Raise ConfigError (exit 78, naming where the URI was set) for an option value libpq
    would refuse before connecting: a port that is not one, an unknown ``sslmode``…"""
    netloc, options = _netloc(target.url), _options(target.url)
    hosts = netloc.rpartition("@")[2]
    ports = [_port_of(entry) for entry in hosts.split(",")] if hosts else []
    if "port" in options:
        ports = options["port"].split(",")
    for port in ports:
        if port and not (port.isdigit() and 0 < int(port) < 65536):
            raise target.config_error(f"invalid port number {port!r}")
    for key, allowed in _CHOICES.items():
        value = options.get(key)
        if value is not None and value not in allowed:
            raise target.config_error(f"invalid {key} value {value!r} (expected one of: {', '.join(allowed)})")
    for key in _INTEGERS:
        value = options.get(key)
        if value is not None and not value.strip().lstrip("-").isdigit():
            raise target.config_error(f"invalid {key} value {value!r} (expected a whole number)")


def _port_of(entry: str) -> str:
    if entry.startswith("["):  # [IPv6]:port
        return entry.partition("]")[2].removeprefix(":")
    return entry.rpartition(":")[2] if ":" in entry else ""


def _netloc(url: str) -> str:
    rest = url.partition("://")[2]
    end = min((index for index in (rest.find("/"), rest.find("?")) if index >= 0), default=len(rest))
    return rest[:end]


def _options(url: str) -> dict[str, str]:
    """The URI's query parameters (the last of a repeated one wins, as in libpq)."""
    return dict(parse_qsl(url.partition("?")[2], keep_blank_values=True))
