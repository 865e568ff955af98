"""Span records sent through the OpenTelemetry SDK's OTLP/HTTP (protobuf) exporter.

Spans are built as the SDK's public ``ReadableSpan`` with the ids and times the mapping gave
them (no tracer: a tracer would give fresh ids and the wall clock) and handed to
``OTLPSpanExporter.export``. The exporter retries what is worth retrying (a refused
connection, 429, 502-504) within its timeout and returns only SUCCESS or FAILURE; the
reason is read from the requests session it is given (its ``session`` parameter).
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from postrun import __version__
from postrun.otel.mapping import SpanRecord
from postrun.otel.target import OtelError, OtelTarget, resolve_timeout, shown_endpoint
from postrun.text import one_line

# Requests are cut to size before (batches.py): a span too big alone is the receiver's to refuse,
# in its own words, rather than dropped unsent by the SDK (1.4x's max_request_size) unexplained.
_UNCAPPED: dict[str, Any] = (
    {"max_request_size": 0} if "max_request_size" in inspect.signature(OTLPSpanExporter.__init__).parameters else {}
)
_RESOURCE = Resource.create({"service.name": "postrun", "service.version": __version__})
_SCOPE = InstrumentationScope("postrun", __version__)
# Past the timeout, the SDK's own last word (the HTTP status of its last retry) is the better reason.
_GRACE_SECONDS = 1.0
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
# The exporter logs each retry and failure, several lines each; our one line says it instead.
_exporter_log = logging.getLogger("opentelemetry.exporter")
_exporter_log.addHandler(logging.NullHandler())
_exporter_log.propagate = False


def readable_spans(records: Sequence[SpanRecord]) -> list[ReadableSpan]:
    return [_readable(record) for record in records]


def _readable(record: SpanRecord) -> ReadableSpan:
    flags = TraceFlags(TraceFlags.SAMPLED)
    context = SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=flags)
    parent = (
        SpanContext(record.trace_id, record.parent_id, is_remote=False, trace_flags=flags)
        if record.parent_id is not None
        else None
    )
    status = (
        Status(StatusCode.ERROR, record.error_message) if record.error_type is not None else Status(StatusCode.UNSET)
    )
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        resource=_RESOURCE,
        attributes=dict(record.attributes),
        kind=SpanKind.INTERNAL,
        status=status,
        start_time=record.start_ns,
        end_time=record.end_ns,
        instrumentation_scope=_SCOPE,
    )


class _WatchedSession(requests.Session):
    """A requests session that keeps why the last request failed, in one line."""

    def __init__(self) -> None:
        super().__init__()
        self.failure: str | None = None

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as exc:
            self.failure = describe_request_error(exc)
            raise
        if 300 <= response.status_code < 400:
            # The SDK follows no redirect and counts a 3xx a success: the spans went nowhere.
            to = response.headers.get("Location")
            said = f"HTTP {response.status_code} {response.reason}" + (f" to {shown_endpoint(to)}" if to else "")
            self.failure = f"{said} (the endpoint must be the receiver's own)"
            raise _Redirected(self.failure)
        if response.status_code >= 400:
            body = one_line(response.text)[:200] if response.text else ""
            said = f"HTTP {response.status_code} {response.reason}"
            self.failure = said + (f": {body}" if body and body != response.reason else "")
        return response


class _Redirected(requests.RequestException):
    """A receiver's redirect, an export that failed (raised to the SDK, which then says FAILURE)."""


def describe_request_error(exc: requests.RequestException) -> str:
    """``connection refused``, ``timed out``, … rather than urllib3's nested repr."""
    text = str(exc)
    found = _ERRNO.search(text)
    if found:
        return found.group(1).strip().lower()
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS handshake failed"
    if isinstance(exc, requests.ConnectionError):
        return "cannot connect"
    return one_line(text)[:200] or type(exc).__name__


class Exporter:
    """One OTLP/HTTP exporter for a push; ``send`` raises OtelError with the reason. ``timeout``
    (seconds) None: the SDK's (``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` / ``_TIMEOUT``, else 10).

    The SDK hands its timeout to requests, which bounds each socket read, not the answer: a
    receiver that trickles it a byte at a time never times out. So each export runs in a
    worker thread that ``send`` waits for until the timeout (and a grace) has passed; then the
    push ends with the one line (README: Failures), and the worker, a daemon, is left to its
    socket (the exporter shut down stops its retries) rather than keeping the process alive.
    """

    def __init__(self, target: OtelTarget, *, timeout: float | None = None) -> None:
        self.target = target
        self.timeout = timeout if timeout is not None else resolve_timeout(os.environ)
        self._session = _WatchedSession()
        self._exporter = OTLPSpanExporter(
            endpoint=target.endpoint,
            headers=dict(target.headers),
            timeout=self.timeout,
            session=self._session,
            **_UNCAPPED,
        )

    def send(self, records: Sequence[SpanRecord]) -> None:
        self._session.failure = None
        spans = readable_spans(records)
        results: list[SpanExportResult] = []

        def export() -> None:
            try:
                results.append(self._exporter.export(spans))
            except requests.RequestException:  # an SDK that lets the session's errors through
                results.append(SpanExportResult.FAILURE)

        worker = threading.Thread(target=export, name="otel-export", daemon=True)
        worker.start()
        worker.join(self.timeout + _GRACE_SECONDS)
        if worker.is_alive() or not results:
            raise OtelError(f"otel {self.target.label}", f"timed out: no answer within {self.timeout:g} s")
        if results[0] is not SpanExportResult.SUCCESS:
            raise OtelError(f"otel {self.target.label}", self._session.failure or "the receiver did not take the spans")

    def close(self) -> None:
        self._exporter.shutdown()  # type: ignore[no-untyped-call]
