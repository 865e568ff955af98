"""How the OTLP receiver is named in lines and errors: never with its user-info or query."""

from __future__ import annotations

import pytest

from postrun.otel.target import resolve_timeout, shown_endpoint


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:6006/v1/traces", "http://127.0.0.1:6006/v1/traces"),
        ("https://ann:pw0rd1@otel.example.com/v1/traces?token=t0k3n#x", "https://***@otel.example.com/v1/traces"),
        ("http://[::1]:4318/v1/traces", "http://[::1]:4318/v1/traces"),
        ("ftp://ann:pw0rd1@h:99999/v1/traces?token=t0k3n", "ftp://***@h:99999/v1/traces"),  # refused, still quoted
        ("ann:pw0rd1@h/v1/traces", "***@h/v1/traces"),  # no scheme
        # A password holding "#" or "?" (refused: it does not parse): none of it is quoted.
        ("https://ann:pw#rd1@otel.example.com:4318/v1", "https://***@otel.example.com:4318/v1"),
        ("https://ann:pw?rd1@otel.example.com/v1?token=t0k3n", "https://***@otel.example.com/v1"),
    ],
)
def test_a_receiver_is_named_without_its_credentials(url: str, shown: str) -> None:
    assert shown_endpoint(url) == shown


@pytest.mark.parametrize(
    ("environ", "seconds"),
    [
        ({}, 10.0),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "3"}, 3.0),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "3", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2.5"}, 2.5),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, 10.0),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, 10.0),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "nan"}, 10.0),
        # "Never time out": as long as a day (a socket or a thread cannot wait 1e10 s: it raised).
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "inf"}, 86400.0),
        ({"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1e10"}, 86400.0),
    ],
)
def test_the_export_timeout_is_read_as_the_sdk_reads_it(environ: dict[str, str], seconds: float) -> None:
    assert resolve_timeout(environ) == seconds
