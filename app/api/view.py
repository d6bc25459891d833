"""GraphQL over HTTP at /graphql: authentication, size limits, error codes and status codes.

- Every POST (and GET query) needs `Authorization: Bearer TOKEN`; missing, unknown or revoked
  tokens get HTTP 401 with code UNAUTHENTICATED before anything is parsed.
- A browser GET (Accept: text/html) gets GraphiQL (app.web: served from the package), preloaded
  with a first query and a hint for the Authorization header.
- Request errors (syntax, validation, variable coercion) carry BAD_USER_INPUT and, when the
  client accepts `application/graphql-response+json`, HTTP 400 (GraphQL over HTTP).
- Errors from the closed set in app.errors keep their message and code; anything else is masked
  to "Internal server error": no stack trace or SQL reaches a client.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import orjson
from cross_web import AsyncHTTPRequestAdapter, HTTPException
from graphql import GraphQLError
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult

from app.api.context import Context
from app.api.error_codes import shown
from app.api.live.transport import (
    CONNECTION_INIT_WAIT,
    LiveContext,
    RecallTransportWS,
    RecallWebSocketAdapter,
)
from app.api.schema import schema
from app.data.readers import reader_for_token
from app.db import Pools
from app.errors import RecallError, ServiceUnavailable, Timeout
from app.observability.logging import log_graphql_error, note_request
from app.request.loaders import Loaders
from app.request.scope import ledger_for, open_session
from app.settings import Settings
from app.web import graphiql_page

_log = logging.getLogger("recall.api")

GRAPHQL_RESPONSE = "application/graphql-response+json"

DEFAULT_QUERY = """# Welcome to Recall's GraphiQL.
#
# Every request needs a token: put yours in the Headers tab below,
#   {"Authorization": "Bearer rcm_..."}
# (`recall serve --demo` prints one; `recall token member WORKSPACE KEY` mints one).
# The schema (Docs, top left) loads as soon as a token is there. Then run this with
# Ctrl-Enter (Cmd-Enter on a Mac).
query FirstLook {
  viewer {
    workspace { key name scopes { key kind name } }
    member { key name }
  }
  messageSearch(query: "postgres migration", first: 5) {
    edges {
      node { key body createdAt scope { key name } author { ... on Member { name } ... on Agent { name } } }
      highlights { start end }
    }
    pageInfo { hasNextPage endCursor }
    candidateBudgetExhausted
  }
}
"""


def _error_body(message: str, code: str) -> dict[str, Any]:
    return {"errors": [{"message": message, "extensions": {"code": code}}]}


class RecallGraphQL(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = RecallTransportWS
    websocket_adapter_class = RecallWebSocketAdapter

    def __init__(self, settings: Settings) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql",
            allow_queries_via_get=True,
            # Only graphql-transport-ws: its connection_init is where the token is checked.
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=CONNECTION_INIT_WAIT,
            # The hub counts subscriptions per token over all its connections, with a code
            # (LIMIT_EXCEEDED); strawberry's own per-connection count would answer without one.
            max_subscriptions_per_connection=None,
            allowed_origins=settings.cors_origin_list,
        )
        self.settings = settings

    async def get_context(self, request: Any, response: Any) -> Any:
        """A WebSocket connection's context (app.api.live.transport); HTTP requests build
        theirs in _handle."""
        state = request.state
        return LiveContext(self.settings, state.pools, state.keys, state.hub)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # Subscriptions (app.api.live.transport): authenticated in connection_init.
            await self.run(WebSocket(scope, receive=receive, send=send))
            return
        if scope["type"] != "http":
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        request = Request(scope, receive)
        response = await self._handle(request)
        await response(scope, receive, send)

    async def _handle(self, request: Request) -> Response:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return await self.render_graphql_ide(request)
        if request.method not in ("GET", "POST"):
            return PlainTextResponse("GraphQL only supports GET and POST", status_code=405)

        too_large = await _read_limited_body(request, self.settings.max_request_bytes)
        if too_large:
            return JSONResponse(
                _error_body("request body too large", "BAD_USER_INPUT"), status_code=413
            )

        # The lifespan's state (app.server): the process's pools (app.db.Pools).
        token = _bearer_token(request)
        pools: Pools = request.state.pools
        db = open_session(pools, self.settings)
        try:
            try:
                reader = await reader_for_token(db, token)
                keys = await request.state.keys.keys()
            except (ServiceUnavailable, Timeout) as e:
                return JSONResponse(_error_body(e.message, e.code), status_code=503)
            if reader is None:
                return JSONResponse(
                    _error_body("missing or unknown bearer token", "UNAUTHENTICATED"),
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            context = Context(
                settings=self.settings,
                keys=keys,
                reader=reader,
                db=db,
                loaders=Loaders(db, reader),
                ledger=ledger_for(reader),
            )
            try:
                async with asyncio.timeout(self.settings.request_timeout):
                    response = await self.run(request, context=context)
            except HTTPException as e:
                return JSONResponse(
                    _error_body(e.reason, "BAD_USER_INPUT"), status_code=e.status_code
                )
            except TimeoutError:
                db.broken = True  # a statement may still be running on it
                return JSONResponse(
                    _error_body(
                        f"the request took longer than {self.settings.request_timeout:g} s",
                        Timeout.code,
                    ),
                    status_code=503,
                )
            return self._finish(request, response, context)
        finally:
            await db.close()

    def encode_json(self, data: object) -> str:
        """Responses and WebSocket messages as compact JSON text, by orjson: a page of 20 hits
        takes ~5 us to encode where the standard library's encoder took ~75 (docs/performance.md,
        "Responses encoded by orjson"). Text, not bytes: strawberry sends bytes over a
        WebSocket as binary frames, which graphql-transport-ws clients do not read."""
        try:
            return orjson.dumps(data).decode()
        except TypeError:
            # What orjson refuses and the standard library writes (an integer past 64 bits, a
            # lone surrogate): the same document, the slower way.
            return json.dumps(data, separators=(",", ":"))

    def decode_json(self, data: str | bytes) -> object:
        """The request body (or GET variables) as JSON; anything else is a 400 with a JSON
        error, never Python's own message (nesting too deep, invalid UTF-8, not an object)."""
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            raise HTTPException(400, "the request body is not valid JSON") from None
        if not isinstance(value, dict):
            raise HTTPException(400, "the request body must be a JSON object")
        return value

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        # Recall's own page (app.web): the vendored GraphiQL build, no CDN, Recall's example
        # query, and no schema fetch until a token is in the Headers tab.
        return graphiql_page(DEFAULT_QUERY)

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        data = await super().parse_http_body(request)
        # For the logs and metrics of this request (app.observability): its operation label,
        # and the document to redact should it fail unexpectedly.
        note_request(data)
        return data

    def _finish(self, request: Request, response: Response, context: Context) -> Response:
        status = getattr(request.state, "status_code", None)
        if status:
            response.status_code = status
        if GRAPHQL_RESPONSE in request.headers.get("accept", ""):
            response.headers["content-type"] = f"{GRAPHQL_RESPONSE}; charset=utf-8"
        if self.settings.expose_statement_count:
            response.headers["x-recall-statements"] = str(context.db.statements)
            response.headers["x-recall-database-ms"] = f"{context.db.database_seconds * 1000:.2f}"
        return response

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        errors = result.errors or []
        # A request error (nothing executed): no `data` entry, and 400 under the GraphQL
        # response media type. Errors raised while executing have a path.
        request_error = result.data is None and bool(errors) and all(e.path is None for e in errors)
        body: GraphQLHTTPResponse = {} if request_error else {"data": result.data}
        if errors:
            body["errors"] = [_format_error(e, request_error) for e in errors]
        if result.extensions:
            body["extensions"] = result.extensions
        if request_error and GRAPHQL_RESPONSE in request.headers.get("accept", ""):
            request.state.status_code = 400
        if any(_code(e) in _UNAVAILABLE for e in errors):
            # The database is down or the request was stopped: retrying later may succeed.
            request.state.status_code = 503
        return body


_UNAVAILABLE = (ServiceUnavailable.code, Timeout.code)


def _code(error: GraphQLError) -> str | None:
    original = error.original_error
    return original.code if isinstance(original, RecallError) else None


def _format_error(error: GraphQLError, request_error: bool) -> dict[str, Any]:
    formatted: dict[str, Any] = dict(error.formatted)
    seen = shown(error, request_error)
    formatted["message"] = seen.message
    # One line without the document (a traceback, redacted, when unexpected).
    log_graphql_error(error, seen.code, request_error=request_error)
    formatted["extensions"] = {
        **(formatted.get("extensions") or {}),
        **seen.extensions,
        "code": seen.code,
    }
    return formatted


def _bearer_token(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _read_limited_body(request: Request, limit: int) -> bool:
    """Read the body up to `limit` bytes; True if it is larger (nothing is parsed then)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return True
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return True
        chunks.append(chunk)
    request._body = b"".join(chunks)
    return False
