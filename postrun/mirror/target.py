"""The mirror's target as ``mirror_url`` gives it: a libpq connection URI, never with a password.

Passwords come from libpq's own means (``~/.pgpass``, ``PGPASSFILE``, a service file), so the
URI can be shown, logged and kept in a config file. This module does not need psycopg.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

_SCHEMES = ("postgresql://", "postgres://")
_PASSWORD_HINT = "use ~/.pgpass, PGPASSFILE or a service file for the password"


def check_mirror_url(url: str) -> str:
    """``url`` when it is a libpq URI without a password; ValueError (never quoting it) otherwise."""
    url = url.strip()
    if not url.startswith(_SCHEMES):
        raise ValueError("expected a libpq URI: postgresql://[user@]host[:port]/database[?options]")
    netloc, query = _netloc(url), _query(url)
    user_info, at, _ = netloc.rpartition("@")
    if (at and ":" in user_info) or "password" in query:
        raise ValueError(f"a password in the URI is refused: {_PASSWORD_HINT}")
    return url


def masked_url(url: str) -> str:
    """``url`` with its user-info replaced by ``***`` (what ``config show`` prints)."""
    scheme, _, rest = url.partition("://")
    netloc = _netloc(url)
    _, at, hosts = netloc.rpartition("@")
    return f"{scheme}://***@{hosts}{rest[len(netloc) :]}" if at else url


@dataclass(frozen=True, slots=True)
class MirrorTarget:
    url: str
    host: str
    database: str

    @property
    def label(self) -> str:
        """``<host>/<database>``: how log lines and commands name the mirror."""
        return f"{self.host}/{self.database}"


def mirror_target(url: str) -> MirrorTarget:
    netloc, query = _netloc(url), _query(url)
    user_info, _, hosts = netloc.rpartition("@")
    host = unquote(hosts.split(",")[0])
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    host = query.get("host", [host])[0] or "localhost"
    path = url.partition("://")[2][len(netloc) :].partition("?")[0]
    database = unquote(path.lstrip("/")) or query.get("dbname", [""])[0] or unquote(user_info) or "(default)"
    return MirrorTarget(url=url, host=host.split(",")[0], database=database)


def _netloc(url: str) -> str:
    rest = url.partition("://")[2]
    end = min((index for index in (rest.find("/"), rest.find("?")) if index >= 0), default=len(rest))
    return rest[:end]


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(url.partition("?")[2])
