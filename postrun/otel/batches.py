"""A session's spans cut into OTLP requests a receiver takes: pure, records in, batches out.

A long session with ``--content`` can hold tens of MB (whole files written, long outputs);
receivers refuse large requests (the OpenTelemetry Collector, which Jaeger and Tempo are
built on, at 20 MiB by default; the SDK itself drops a request over 64 MiB unsent). So a
session goes in batches of at most ``MAX_SPANS`` spans (the SDK's own batch size) and about
``MAX_BYTES``; ids are the session's own, so the batches make up the same trace.
"""

from __future__ import annotations

from collections.abc import Sequence

from postrun.otel.mapping import SpanRecord

MAX_SPANS = 512  # OTEL_BSP_MAX_EXPORT_BATCH_SIZE's default
MAX_BYTES = 4 * 1024 * 1024  # well under the receivers' usual limits
_SPAN_OVERHEAD = 96  # ids, times, kind, status and the framing of a span in the protobuf
_ATTRIBUTE_OVERHEAD = 12  # the framing of one key-value


def span_size(record: SpanRecord) -> int:
    """About the bytes ``record`` takes in an OTLP request (a little over, never far under)."""
    size = _SPAN_OVERHEAD + len(record.name.encode()) + len((record.error_message or "").encode())
    for key, value in record.attributes.items():
        size += _ATTRIBUTE_OVERHEAD + len(key.encode())
        if isinstance(value, str):
            size += len(value.encode())
        elif isinstance(value, tuple):
            size += sum(len(item.encode()) + 4 for item in value)
        else:
            size += 10
    return size


def batches(
    records: Sequence[SpanRecord], *, max_spans: int = MAX_SPANS, max_bytes: int = MAX_BYTES
) -> list[list[SpanRecord]]:
    """``records`` in order, cut where the next span would pass ``max_spans`` or ``max_bytes``
    (a span bigger than ``max_bytes`` alone goes alone: the receiver says whether it takes it)."""
    cut: list[list[SpanRecord]] = []
    current: list[SpanRecord] = []
    size = 0
    for record in records:
        grown = size + span_size(record)
        if current and (len(current) >= max_spans or grown > max_bytes):
            cut.append(current)
            current, grown = [], span_size(record)
        current.append(record)
        size = grown
    if current:
        cut.append(current)
    return cut
