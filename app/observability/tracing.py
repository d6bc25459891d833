"""OpenTelemetry traces: off unless the standard OTEL_* variables ask for them
(docs/operations.md, Traces; read as app.settings.TraceSettings). Then every HTTP request is a server span (the ASGI
instrumentation) with a client span per SQL statement (the asyncpg instrumentation), exported
by OTLP over HTTP or to the console.

No query text reaches an attribute: the ASGI middleware never sees the query string (a GET's
`?query=` is the search), SQL parameters are not captured, and each statement's text is
replaced by its first word and a fingerprint (which statement it was, not what it said).
Without configuration nothing is installed: no middleware, no wrapped asyncpg methods.
"""

from __future__ import annotations

import hashlib
import importlib.util
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import UsageError
from app.settings import TraceSettings

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

# Attributes that may carry statement or URL text, in old and stable semantic conventions.
_STATEMENT_KEYS = ("db.statement", "db.query.text")
_URL_KEYS = ("http.url", "url.full", "http.target", "url.query")


def configured(otel: TraceSettings) -> bool:
    """Whether OTEL_* variables ask for traces: an exporter other than `none`, or an OTLP
    endpoint; never with OTEL_SDK_DISABLED=true."""
    if otel.sdk_disabled.strip().lower() == "true":
        return False
    exporters = otel.traces_exporter.strip().lower()
    if exporters:
        return exporters != "none"
    return bool(otel.otlp_endpoint or otel.otlp_traces_endpoint)


def check_configuration(otel: TraceSettings) -> None:
    """Refuse, in one line, traces that OTEL_* asks for but this install cannot send: the
    `otel` extra missing (tracing is optional: the base install has no OpenTelemetry), or an
    exporter Recall does not know. `recall serve` calls it before it starts anything."""
    if not configured(otel):
        return
    if not all(_installed(name) for name in _OTEL_MODULES):
        raise UsageError(
            "OTEL_* variables ask for traces, but OpenTelemetry is not installed: "
            "pip install 'recall[otel]' (or unset them)"
        )
    for name in (otel.traces_exporter or "otlp").split(","):
        if name.strip().lower() not in ("otlp", "console", "none", ""):
            raise UsageError(
                f"OTEL_TRACES_EXPORTER: unsupported exporter '{name.strip()}' (otlp, console)"
            )


# What the `otel` extra brings (pyproject.toml): checked before any is imported.
_OTEL_MODULES = (
    "opentelemetry.sdk",
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.instrumentation.asgi",
    "opentelemetry.instrumentation.asyncpg",
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def provider_from_environment(otel: TraceSettings) -> TracerProvider | None:
    """A tracer provider exporting where OTEL_* says, or None (tracing off)."""
    if not configured(otel):
        return None
    check_configuration(otel)
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporters: list[SpanExporter] = []
    for name in (otel.traces_exporter or "otlp").split(","):
        name = name.strip().lower()
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporters.append(OTLPSpanExporter())
        elif name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter())
    provider = new_provider(otel)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def new_provider(otel: TraceSettings) -> TracerProvider:
    """A provider with Recall's resource (OTEL_SERVICE_NAME, which the SDK reads; default
    `recall`) and the statement scrubber first, so every exporter sees scrubbed spans."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider

    resource = Resource.create({} if otel.service_name else {SERVICE_NAME: "recall"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(_scrubber())
    return provider


def _scrubber() -> SpanProcessor:
    from opentelemetry.sdk.trace import SpanProcessor

    class Scrub(SpanProcessor):
        """Runs as a span starts, while it still takes attributes."""

        def on_start(self, span: Span, parent_context: Context | None = None) -> None:
            attributes = span.attributes or {}
            for key in _STATEMENT_KEYS:
                sql = attributes.get(key)
                if isinstance(sql, str):
                    span.set_attribute(key, fingerprint(sql))
            for key in _URL_KEYS:
                value = attributes.get(key)
                if isinstance(value, str) and "?" in value:
                    span.set_attribute(key, value.split("?", 1)[0])

        def on_end(self, span: ReadableSpan) -> None:
            pass

    return Scrub()


def fingerprint(sql: str) -> str:
    """`select #1a2b3c4d5e6f`: the statement's verb and a digest of its text."""
    words = sql.split()
    verb = words[0].strip(";").lower() if words else "?"
    return f"{verb} #{hashlib.sha256(sql.encode()).hexdigest()[:12]}"


def instrument(app: ASGIApp, provider: TracerProvider) -> ASGIApp:
    """`app` wrapped in a server span per request, and asyncpg's statements traced."""
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    instrumentor = AsyncPGInstrumentor(capture_parameters=False)  # type: ignore[no-untyped-call]
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument(tracer_provider=provider)
    traced = OpenTelemetryMiddleware(
        _RestoreQueryString(app),
        excluded_urls="/healthz,/readyz,/metrics",
        tracer_provider=provider,
        exclude_spans=["receive", "send"],
    )
    return _HideQueryString(traced)


def uninstrument() -> None:
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


_STASH = "recall.query_string"


class _HideQueryString:
    """Outside the span middleware: it sees no query string (so records none)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "query_string": b"", _STASH: scope.get("query_string", b"")}
        await self.app(scope, receive, send)


class _RestoreQueryString:
    """Inside it: the app gets its query string back."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _STASH in scope:
            scope = {**scope, "query_string": scope[_STASH]}
        await self.app(scope, receive, send)


def annotate(attributes: dict[str, Any]) -> None:
    """Add attributes to the current span, if one is recording (a no-op without tracing)."""
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(attributes)
