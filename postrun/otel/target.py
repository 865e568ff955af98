"""Where ``postrun otel push`` sends traces, and with which headers.

The endpoint is the full OTLP/HTTP traces URL (``…/v1/traces``): ``--endpoint``, else the
``otel_endpoint`` setting, else the OpenTelemetry variables as the SDK reads them
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as is, ``OTEL_EXPORTER_OTLP_ENDPOINT`` with
``v1/traces`` added). Headers likewise: ``--header K=V`` (repeatable), else ``otel_headers``,
else ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS``, all in the
variables' ``k=v,k2=v2`` form (values URL-encoded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from postrun.errors import PostrunError

TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
BASE_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_HEADERS = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
BASE_HEADERS = "OTEL_EXPORTER_OTLP_HEADERS"
TRACES_TIMEOUT = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
BASE_TIMEOUT = "OTEL_EXPORTER_OTLP_TIMEOUT"
DEFAULT_TIMEOUT = 10.0  # seconds, the SDK's
# A longer one (``inf``, ``1e10``: "never time out") is taken as this: past about 292 years
# neither a socket's timeout nor a thread's wait can be set, and the push failed on it.
LONGEST_TIMEOUT = 86400.0
_TRACES_PATH = "v1/traces"
NO_ENDPOINT = f"no OTLP endpoint: pass --endpoint URL, set otel_endpoint, or set {TRACES_ENDPOINT} or {BASE_ENDPOINT}"


class OtelError(PostrunError):
    """The receiver cannot be used (bad endpoint, refused, an HTTP error): exit 1."""


def check_endpoint(url: str) -> str:
    """``url`` when it is an http(s) URL with a host; ValueError (quoting it without user-info
    or query) otherwise."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ValueError(f"not a URL: {shown_endpoint(url)!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http:// or https:// URL with a host, got {shown_endpoint(url)!r}")
    return url


def shown_endpoint(url: str) -> str:
    """``url`` without its query or fragment and with any user-info as ``***`` (where tokens
    hide): how lines and errors name the receiver, whether or not the URL parses."""
    # User-info first: a password may hold "#" or "?" (a URL that then does not parse), and
    # cutting the query or fragment first would leave its start in clear.
    head, slashes, rest = url.partition("//") if "//" in url else ("", "", url)
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return f"{head}{slashes}{authority}{slash}{path}".split("?", 1)[0].split("#", 1)[0]


@dataclass(frozen=True, slots=True)
class OtelTarget:
    endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return shown_endpoint(self.endpoint)


def resolve_target(
    *,
    endpoint: str | None,
    headers: Sequence[str],
    setting_endpoint: str | None,
    setting_headers: str | None,
    environ: Mapping[str, str],
) -> OtelTarget:
    """The target from the flags, else the settings, else the environment; OtelError (exit 1)
    naming where a bad endpoint came from, or saying that none is set."""
    chosen: tuple[str, str] | None = None
    if endpoint is not None:
        chosen = ("--endpoint", endpoint)
    elif setting_endpoint:
        chosen = ("otel_endpoint", setting_endpoint)
    elif environ.get(TRACES_ENDPOINT, "").strip():
        chosen = (TRACES_ENDPOINT, environ[TRACES_ENDPOINT])
    elif environ.get(BASE_ENDPOINT, "").strip():
        base = environ[BASE_ENDPOINT].strip()
        chosen = (BASE_ENDPOINT, (base if base.endswith("/") else base + "/") + _TRACES_PATH)
    if chosen is None:
        raise OtelError("otel", NO_ENDPOINT)
    where, url = chosen
    try:
        url = check_endpoint(url)
    except ValueError as exc:
        raise OtelError(where, str(exc)) from None
    return OtelTarget(url, _headers(headers, setting_headers, environ))


def _headers(flags: Sequence[str], setting: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    if flags:
        found: dict[str, str] = {}
        for flag in flags:
            key, equals, value = flag.partition("=")
            if not equals or not key.strip():
                raise OtelError("--header", "expected KEY=VALUE (a header's value is never shown)")
            found[key.strip()] = value.strip()
        return found
    for where, given in (("otel_headers", setting), (TRACES_HEADERS, environ.get(TRACES_HEADERS))):
        if given:
            return parse_headers(given, where)
    return parse_headers(environ.get(BASE_HEADERS, ""), BASE_HEADERS)


def parse_headers(value: str, where: str) -> dict[str, str]:
    """``k=v,k2=v2`` as the OTLP header variables have it, parsed by the SDK's own parser
    (values URL-decoded; a pair it cannot read is an error here, not skipped)."""
    from opentelemetry.util.re import parse_env_headers

    pairs = [pair for pair in value.split(",") if pair.strip()]
    if any("=" not in pair or not pair.partition("=")[0].strip() for pair in pairs):
        raise OtelError(where, "expected headers as key=value,key2=value2")
    return dict(parse_env_headers(value, liberal=True))


def resolve_timeout(environ: Mapping[str, str]) -> float:
    """An export's timeout in seconds, read as the SDK reads it: the traces variable, else the
    general one, else 10 (a value that is not a number: 10, as the SDK falls back; 0 or less,
    which would fail every request at once, too), at most ``LONGEST_TIMEOUT``."""
    raw = environ.get(TRACES_TIMEOUT) or environ.get(BASE_TIMEOUT) or ""
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_TIMEOUT
    return min(value, LONGEST_TIMEOUT) if value > 0 else DEFAULT_TIMEOUT


def masked_headers(value: str) -> str:
    """``k=***,k2=***``: header values are credentials (``config show``)."""
    return ",".join(f"{pair.partition('=')[0].strip()}=***" for pair in value.split(",") if pair.strip())
