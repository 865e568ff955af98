"""Sessions as OpenTelemetry GenAI traces (``postrun otel push``), over OTLP/HTTP.

The OpenTelemetry SDK and its OTLP/HTTP exporter come with the ``otel`` extra; without them
everything else works, and ``otel push`` says what to install.
"""

from __future__ import annotations

from postrun.errors import PostrunError

SDK_MISSING = "the OpenTelemetry SDK is not installed (install postrun[otel], e.g. `pipx install 'postrun[otel]'`)"


def require_sdk(where: str) -> None:
    """Raise PostrunError naming ``where`` when the SDK or its OTLP/HTTP exporter cannot be imported."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise PostrunError(where, SDK_MISSING) from None
