"""The HTTP middleware every request passes: a request id (honoured from `X-Request-Id`, else
made here, and returned), security headers, the access log (path, never the query string) and
the request metrics. Pure ASGI: no per-request task or body copy."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.observability import context, metrics, tracing

_access = logging.getLogger("recall.access")
_log = logging.getLogger("recall.http")

# A client's id is kept when it looks like one (tracing ids, UUIDs, ULIDs); anything else
# (too long, spaces, quotes) is replaced, so it can be logged and echoed safely.
_VALID_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")

# For HTML that brings no policy of its own (app.web's pages do: only this origin). The
# GraphiQL page strawberry renders loads its scripts from unpkg.com, inline ones included.
FALLBACK_CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' https://unpkg.com",
        "style-src 'self' 'unsafe-inline' https://unpkg.com",
        "img-src 'self' data:",
        "font-src 'self' data: https://unpkg.com",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
# Probes and scrapes: logged at debug, not counted as GraphQL requests.
_QUIET = frozenset({"/healthz", "/readyz", "/metrics"})


class RequestMiddleware:
    def __init__(self, app: ASGIApp, *, traced: bool = False) -> None:
        self.app = app
        self.traced = traced

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _header(scope, b"x-request-id")
        request_id = incoming if incoming and _VALID_ID.fullmatch(incoming) else uuid.uuid4().hex
        info, token = context.begin(request_id)
        path: str = scope.get("path", "")
        started = time.perf_counter()
        status = 500
        started_response = False

        async def send_with_headers(message: Message) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                started_response = True
                status = message["status"]
                headers = MutableHeaders(scope=message)
                headers["x-request-id"] = request_id
                _security_headers(headers, path)
                if self.traced:
                    # Now: the server span ends with the response's last byte.
                    tracing.annotate(
                        {
                            "recall.request_id": request_id,
                            "recall.operation": info.operation,
                            "recall.outcome": _outcome(status, info),
                            "recall.statements": info.statements,
                        }
                    )
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            # Logged here, with the request id and redacted (app.observability.logging); the
            # client gets the id to quote.
            _log.error("unhandled exception", exc_info=True, extra={"path": path})
            if started_response:
                raise
            await JSONResponse(
                {
                    "errors": [
                        {
                            "message": "Internal server error",
                            "extensions": {"code": "INTERNAL_SERVER_ERROR"},
                        }
                    ]
                },
                status_code=500,
            )(scope, receive, send_with_headers)
        finally:
            seconds = time.perf_counter() - started
            try:
                self._finish(scope, info, path, status, seconds)
            finally:
                context.end(token)

    def _finish(
        self, scope: Scope, info: context.RequestInfo, path: str, status: int, seconds: float
    ) -> None:
        graphql = path == "/graphql"
        if graphql:
            if scope.get("method") == "GET" and "text/html" in (_header(scope, b"accept") or ""):
                info.operation = "ide"
            elif info.request_error:
                info.operation = "invalid"
            outcome = _outcome(status, info)
            if status == 413:
                metrics.observe_rejection("request_bytes")
            metrics.observe_request(
                info.operation, outcome, seconds, info.database_seconds, info.statements
            )
        _access.log(
            logging.DEBUG if path in _QUIET else logging.INFO,
            "request",
            extra={
                "method": scope.get("method"),
                "path": path,
                "status": status,
                "ms": round(seconds * 1000, 2),
                **(
                    {
                        "operation": info.operation,
                        "statements": info.statements,
                        "sql_ms": round(info.database_seconds * 1000, 2),
                        "error_code": info.error_code,
                    }
                    if graphql
                    else {}
                ),
            },
        )


def _outcome(status: int, info: context.RequestInfo) -> str:
    if status == 401:
        return "unauthenticated"
    if status == 413:
        return "too_large"
    if info.error_code is not None:
        return info.error_code.lower()
    return "ok" if status < 400 else f"http_{status}"


def _security_headers(headers: MutableHeaders, path: str) -> None:
    headers.setdefault("x-content-type-options", "nosniff")
    headers.setdefault("referrer-policy", "no-referrer")
    if headers.get("content-type", "").startswith("text/html"):
        headers.setdefault("content-security-policy", FALLBACK_CSP)
        headers.setdefault("x-frame-options", "DENY")
    # API answers are per token: no cache may keep them. Pages set their own; static files
    # keep their validators.
    if not path.startswith("/static/"):
        headers.setdefault("cache-control", "no-store")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None
