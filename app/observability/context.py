"""What the current request did, in a context variable the middleware sets.

Filled as the request goes: the GraphQL document and operation (app.api.view), the first error
code (app.observability.logging), statements and database time (app.data.session). Read at the
request's end for the access log, the metrics and the span.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class RequestInfo:
    request_id: str
    # Bounded labels: "query:messageSearch", "invalid", "-" before anything was parsed.
    operation: str = "-"
    document: str | None = None
    variables: dict[str, Any] | None = None
    # The code of the request's first error, or INTERNAL_SERVER_ERROR if any was unexpected.
    error_code: str | None = None
    request_error: bool = False
    statements: int = 0
    database_seconds: float = 0.0
    rejections: list[str] = field(default_factory=list)


_current: ContextVar[RequestInfo | None] = ContextVar("recall_request", default=None)


def current() -> RequestInfo | None:
    return _current.get()


def current_request_id() -> str | None:
    info = _current.get()
    return info.request_id if info is not None else None


def begin(request_id: str) -> tuple[RequestInfo, Any]:
    """Start a request's record; returns it and the token that `end` takes."""
    info = RequestInfo(request_id)
    return info, _current.set(info)


def end(token: Any) -> None:
    _current.reset(token)


def observe_session(statements: int, database_seconds: float) -> None:
    """A database session of the current request closed (app.data.session)."""
    info = _current.get()
    if info is not None:
        info.statements += statements
        info.database_seconds += database_seconds
