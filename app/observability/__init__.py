"""Operations: what one request did (context), Prometheus metrics, OpenTelemetry tracing, JSON
logs, and the HTTP middleware that ties them to a request id (docs/operations.md).

A foundation package: it imports nothing of Recall above app.errors and app.settings, so the
data layer may report what a request did here (app.data.session) without importing upwards.
"""
