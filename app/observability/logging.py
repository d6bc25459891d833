"""Logs: one JSON object a line (or plain text for a terminal), each with the request id, and
nothing a client wrote in them (docs/operations.md, Logs).

Search text must not reach the logs: the audit keeps only digests of it (docs/design.md,
Audit). So GraphQL errors are logged here, not by strawberry (whose logger prints the error
with the document excerpt and a traceback): an expected error is one line with its code and
path; an unexpected one has a traceback, with the document's string literals and comments
blanked and the variables named but not shown. Every exception message is redacted too:
PostgreSQL's are dropped (they quote values: `invalid input syntax ... "<the search terms>"`),
keeping the SQLSTATE; others lose their quoted parts.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

import asyncpg
from graphql.error import GraphQLError

from app.observability import context, metrics

_log = logging.getLogger("recall.graphql")


# uvicorn adds `color_message` (the message with terminal colour codes) to its records.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


def _silenced(_record: logging.LogRecord) -> bool:
    return False


class _RequestIdFactory:
    """A record factory around the one it replaces: every record, from any logger, carries the
    request id of the request that logged it."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        record.request_id = context.current_request_id()
        return record


def install() -> None:
    """What the app's logging needs of the process, set by the app factory (idempotent):
    records carry the request id, and strawberry's own error log (message, document excerpt,
    traceback) is off, because log_graphql_error logs errors without the request's text."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _RequestIdFactory):
        logging.setLogRecordFactory(_RequestIdFactory(current))
    strawberry_log = logging.getLogger("strawberry.execution")
    if _silenced not in strawberry_log.filters:
        strawberry_log.addFilter(_silenced)


def uninstall() -> None:
    """The process's logging as it was before install()."""
    current = logging.getLogRecordFactory()
    if isinstance(current, _RequestIdFactory):
        logging.setLogRecordFactory(current.inner)
    logging.getLogger("strawberry.execution").removeFilter(_silenced)


# GraphQL: block strings, strings, comments (in that order, so a '#' in a string stays put).
_DOCUMENT_SECRETS = re.compile(r'"""(?:\\"""|[^"]|"(?!""))*"""|"(?:\\.|[^"\\\n])*"|#[^\n]*')
# Quoted parts of an exception's message.
_QUOTED = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def redact_document(document: str | None) -> str | None:
    """The document with its string literals and comments blanked: its shape, not its text."""
    if document is None:
        return None

    def blank(m: re.Match[str]) -> str:
        return "#" if m.group(0).startswith("#") else '"…"'

    return _DOCUMENT_SECRETS.sub(blank, document)


def redact_message(exc: BaseException) -> str:
    """An exception's message without what a client may have sent."""
    if isinstance(exc, asyncpg.PostgresError):
        sqlstate = getattr(exc, "sqlstate", None) or "?"
        return f"(PostgreSQL message withheld; SQLSTATE {sqlstate})"
    return _QUOTED.sub('"…"', str(exc))


def format_exception(exc: BaseException) -> str:
    """A traceback (frames and source lines) with every message of the chain redacted."""
    parts: list[str] = []
    seen: set[int] = set()
    chain: list[tuple[BaseException, str | None]] = []
    current: BaseException | None = exc
    link: str | None = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, "The above exception was the direct cause of:"
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, "During handling of the above, another:"
        else:
            current = None
    for item, link in reversed(chain):
        tb: TracebackType | None = item.__traceback__
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_tb(tb))
        parts.append(f"{type(item).__module__}.{type(item).__qualname__}: {redact_message(item)}\n")
        if link is not None:
            parts.append(f"\n{link}\n\n")
    return "".join(parts).rstrip("\n")


def note_request(data: Any) -> None:
    """The parsed request (strawberry's GraphQLRequestData, or a batch of them) of the current
    request: its operation label and, kept by reference for redaction, document and variables."""
    info = context.current()
    if info is None:
        return
    if isinstance(data, list):
        info.operation = "batch"
        return
    info.document = data.query
    info.variables = data.variables
    info.operation = metrics.operation_label(data.query, data.operation_name)


def log_graphql_error(error: GraphQLError, code: str, *, request_error: bool) -> None:
    """Log one GraphQL error of the current request (app.api.view) and note its code."""
    info = context.current()
    unexpected = code == "INTERNAL_SERVER_ERROR"
    if info is not None:
        info.request_error = info.request_error or request_error
        if info.error_code is None or unexpected:
            info.error_code = code
    limit = metrics.limit_of(error) if request_error else None
    if limit is not None:
        metrics.observe_rejection(limit)
        if info is not None:
            info.rejections.append(limit)
    fields: dict[str, Any] = {
        "code": code,
        "path": ".".join(str(p) for p in error.path) if error.path else None,
        "operation": info.operation if info is not None else None,
    }
    if limit is not None:
        fields["limit"] = limit
    if not unexpected:
        fields["error"] = _QUOTED.sub('"…"', error.message)
        _log.info("graphql error", extra=fields)
        return
    if info is not None:
        fields["document"] = redact_document(info.document)
        fields["variables"] = sorted(info.variables or {})
    original = error.original_error
    exc_info = (type(original), original, original.__traceback__) if original else None
    _log.error("unexpected error", exc_info=exc_info, extra=fields)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request_id, the record's extra
    fields and, for an exception, its redacted traceback."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and value is not None:
                out[key] = value
        if record.exc_info and record.exc_info[1] is not None:
            out["exception"] = format_exception(record.exc_info[1])
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """For a terminal: `time level logger [request id] message key=value ...`."""

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None)
        extras = " ".join(
            f"{k}={v}"
            for k, v in record.__dict__.items()
            if k not in _STANDARD and k != "request_id" and not k.startswith("_") and v is not None
        )
        line = " ".join(
            p
            for p in (
                time.strftime("%H:%M:%S", time.localtime(record.created)),
                f"{record.levelname.lower():7}",
                record.name,
                f"[{request_id}]" if request_id else "",
                record.getMessage(),
                extras,
            )
            if p
        )
        if record.exc_info and record.exc_info[1] is not None:
            line += "\n" + format_exception(record.exc_info[1])
        return line


def _timestamp(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created % 1 * 1000):03d}Z"


def configure_logging(fmt: str = "json", level: str = "info") -> None:
    """Route every logger (Recall's, uvicorn's, asyncpg's) through one stderr handler in the
    chosen format. uvicorn's own access log is left off: it prints query strings (a GET
    query is the search text); app.observability.middleware writes one without them."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextFormatter() if fmt == "text" else JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True
