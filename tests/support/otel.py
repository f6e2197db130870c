"""Spans captured in memory: the OpenTelemetry SDK as an application would set it up, once per process.

The global tracer provider can be set only once per process (a second ``set_tracer_provider`` is ignored), so
the first test that asks sets it, with an ``InMemorySpanExporter`` behind a ``SimpleSpanProcessor`` (each span is
exported as it ends), and each test clears the exporter before it runs. aiforge gets its tracer from that global
provider, exactly as in a user's program.
"""

from __future__ import annotations

import functools
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@functools.cache
def span_exporter() -> InMemorySpanExporter:
    """The process's in-memory exporter, behind the global tracer provider (set on first call)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def every_text(span: ReadableSpan) -> list[str]:
    """Every string a span carries: its name, status description, attribute and event values, event names."""
    texts = [span.name, span.status.description or ""]
    attribute_sets = [span.attributes or {}] + [event.attributes or {} for event in span.events]
    texts += [event.name for event in span.events]
    for attributes in attribute_sets:
        for key, value in attributes.items():
            texts.append(key)
            texts.extend(str(v) for v in (value if isinstance(value, tuple | list) else (value,)))
    return texts


def by_name(spans: Any, prefix: str) -> list[ReadableSpan]:
    """The spans whose name starts with ``prefix``, in the order they ended."""
    return [s for s in spans if s.name.startswith(prefix)]
