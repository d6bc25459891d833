"""/mcp over HTTP around the SDK's Streamable HTTP app: what a stateless, JSON-answering server
owes clients that the SDK's transport does not do.

- POST only: the server keeps no session, so there is no event stream to open (GET) or
  session to end (DELETE); both answer 405 with `Allow: POST` instead of a stream that never
  closes.
- JSON-RPC framing (app.mcp.jsonrpc): -32700 for a body that is not JSON, -32600 for JSON that
  is not a message (400, nothing echoed), batches answered at protocol 2025-03-26 and refused
  after it. Each element of a batch goes through the SDK app as a request of its own (token,
  Host and Origin checked each time); a batch element refused at the HTTP level (401, 403,
  421) refuses the whole batch the same way. These framing errors are answered before the
  token is checked: they carry nothing but the error.
- OAuth 2.0 Protected Resource Metadata (RFC 9728): a 401 names it in `WWW-Authenticate`
  (`resource_metadata`), and /.well-known/oauth-protected-resource[/mcp] serves it: the
  resource and its one bearer method (`header`). Recall's tokens come from `recall token`
  and startTurn, not from an authorization server, so it names none (the field is optional).
  URLs are built from the request's own scheme and Host, so they are the ones the client used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.mcp import jsonrpc

PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"


def _url(request: Request, path: str) -> str:
    return str(request.url.replace(path=path, query=None, fragment=None))


def metadata_url(request: Request) -> str:
    return _url(request, METADATA_PATH + PATH)


async def protected_resource_metadata(request: Request) -> Response:
    return JSONResponse(
        {
            "resource": _url(request, PATH),
            "bearer_methods_supported": ["header"],
            "resource_name": "Recall",
        },
        headers={"cache-control": "public, max-age=3600"},
    )


def metadata_routes() -> list[Route]:
    """RFC 9728 §3.1 puts the metadata of http://host/mcp at the well-known path followed by
    /mcp; clients that look at the bare well-known path find the same document there."""
    return [
        Route(METADATA_PATH + PATH, protected_resource_metadata, methods=["GET"]),
        Route(METADATA_PATH, protected_resource_metadata, methods=["GET"]),
    ]


@dataclass
class _Captured:
    """One answer of the SDK app, kept instead of sent (a batch element's)."""

    status: int = 500
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status, self.headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            self.body.extend(message.get("body", b""))

    def response(self) -> Response:
        response = Response(bytes(self.body), status_code=self.status)
        response.raw_headers = [
            *(h for h in self.headers if h[0].lower() != b"content-length"),
            (b"content-length", str(len(self.body)).encode()),
        ]
        return response


class _Abort(Exception):
    def __init__(self, captured: _Captured) -> None:
        self.captured = captured


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _with_resource_metadata(scope: Scope, send: Send) -> Send:
    """`send` adding `resource_metadata` to a 401's WWW-Authenticate (RFC 9728 §5.1)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 401:
            where = metadata_url(Request(scope))
            headers = [
                (k, v + f', resource_metadata="{where}"'.encode())
                if k.lower() == b"www-authenticate"
                else (k, v)
                for k, v in message.get("headers", [])
            ]
            message = {**message, "headers": headers}
        await send(message)

    return sending


class McpEndpoint:
    """The ASGI app routed at /mcp: this module's rules around the SDK's app."""

    def __init__(self, sdk_app: ASGIApp, max_request_bytes: int) -> None:
        self.sdk_app = sdk_app
        self.post = RequestBodyLimitMiddleware(self._post, max_request_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.sdk_app(scope, receive, send)
            return
        send = _with_resource_metadata(scope, send)
        if scope["method"] != "POST":
            # The server is stateless: no stream to open, no session to delete.
            await Response(status_code=405, headers={"allow": "POST"})(scope, receive, send)
            return
        await self.post(scope, receive, send)

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await Request(scope, receive).body()
        inbound = jsonrpc.read(body)
        if isinstance(inbound, jsonrpc.Single):
            await self.sdk_app(scope, _replay(body), send)
            return
        if isinstance(inbound, jsonrpc.Refused):
            await JSONResponse(inbound.answer, status_code=400)(scope, receive, send)
            return
        # The version the client negotiated: the header it sends after initialize (none
        # means 2025-03-26, as the transport specification says).
        version = Request(scope).headers.get("mcp-protocol-version", DEFAULT_NEGOTIATED_VERSION)
        refusal = jsonrpc.batch_refusal(version)
        if refusal is not None:
            await JSONResponse(refusal, status_code=400)(scope, receive, send)
            return

        async def answer_one(message: jsonrpc.Message) -> jsonrpc.Message | None:
            return await self._one(scope, message)

        try:
            answers = await jsonrpc.answer_batch(inbound.items, answer_one)
        except _Abort as aborted:
            await aborted.captured.response()(scope, receive, send)
            return
        response = JSONResponse(answers) if answers else Response(status_code=202)
        await response(scope, receive, send)

    async def _one(self, scope: Scope, message: jsonrpc.Message) -> jsonrpc.Message | None:
        """One batch element through the SDK app, as a POST of its own."""
        body = json.dumps(message).encode()
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        captured = _Captured()
        await self.sdk_app({**scope, "headers": headers}, _replay(body), captured.send)
        if captured.status == 202:
            return None  # a notification or a response: accepted, nothing to answer
        if captured.status == 200:
            try:
                answer: Any = json.loads(captured.body)
            except ValueError:
                answer = None
            if isinstance(answer, dict) and answer.get("jsonrpc") == "2.0":
                return answer
        # Refused at the HTTP level (a bad token, a Host or Origin not allowed, ...): so is the
        # whole batch, the same way.
        raise _Abort(captured)
