"""GraphQL subscriptions over WebSocket at /graphql: the graphql-transport-ws subprotocol only
(the legacy graphql-ws one is not offered), authenticated in connection_init (docs/live.md).

- The token goes in connection_init's payload, `{"Authorization": "Bearer TOKEN"}`; a missing,
  unknown, revoked or expired one closes the socket with 4401 before anything else is read.
- Each subscription's operation is measured and limited like a query (app.api.limits); its
  errors carry the closed set of codes (app.errors), masked like the HTTP view's.
- A message a client does not read within RECALL_LIVE_SEND_TIMEOUT seconds (the socket's buffer
  is full), or a subscriber more than RECALL_LIVE_MAX_BACKLOG events behind the log, closes the
  socket with 4008: bounded memory, never an unbounded queue.

Events are resolved with a context of their own per wake-up (a fresh session and loaders, the
reader read again from the token), never a connection-long cache of what the reader could read:
`LiveContext` reads them from a context variable each subscription's task sets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from graphql import GraphQLError
from starlette.websockets import WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import NonJsonMessageReceived, NonTextMessageReceived
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    Message,
)
from strawberry.types.execution import PreExecutionError

from app.api.error_codes import shown
from app.data.readers import Reader, reader_for_token
from app.data.session import Session
from app.db import Pools
from app.errors import RecallError
from app.live.hub import Hub
from app.live.updates import LiveEnv
from app.message_search.keys import KeyRing, Keys
from app.request.loaders import Loaders
from app.request.scope import open_session
from app.settings import Settings

_log = logging.getLogger("recall.live")

# Close codes (docs/live.md).
UNAUTHORIZED = 4401
TOO_SLOW = 4008
UNAVAILABLE = 1011


@dataclass(frozen=True, slots=True)
class _Batch:
    reader: Reader
    db: Session
    loaders: Loaders


_batch: ContextVar[_Batch | None] = ContextVar("recall_live_batch", default=None)


class LiveContext:
    """A WebSocket connection's context: its settings, keys and token, and — while a batch of
    updates is resolved — that batch's reader, session and loaders (the same attributes the
    HTTP view's Context has, so every type resolves the same way)."""

    ledger = None

    def __init__(self, settings: Settings, pools: Pools, keyring: KeyRing, hub: Hub) -> None:
        self.settings = settings
        self.pools = pools
        self.keyring = keyring
        self.hub = hub
        self.token = ""
        self._reader: Reader | None = None
        self._keys: Keys | None = None
        self.handler: RecallTransportWS | None = None

    @property
    def reader(self) -> Reader:
        batch = _batch.get()
        if batch is not None:
            return batch.reader
        assert self._reader is not None  # set by connection_init before any operation
        return self._reader

    @property
    def keys(self) -> Keys:
        assert self._keys is not None
        return self._keys

    @property
    def db(self) -> Session:
        batch = _batch.get()
        if batch is None:
            raise RuntimeError("no live batch is being resolved")
        return batch.db

    @property
    def loaders(self) -> Loaders:
        batch = _batch.get()
        if batch is None:
            raise RuntimeError("no live batch is being resolved")
        return batch.loaders

    def env(self) -> LiveEnv:
        return LiveEnv(self.hub, self.session, self.settings.live_max_backlog)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Session]:
        db = open_session(self.pools, self.settings)
        try:
            yield db
        finally:
            await db.close()

    async def resolving(self, reader: Reader, db: Session) -> None:
        """The batch about to be handed out resolves with this reader and session."""
        _batch.set(_Batch(reader, db, Loaders(db, reader)))

    async def too_slow(self) -> None:
        if self.handler is not None:
            await self.handler.close(TOO_SLOW, "too slow: the subscriber fell too far behind")

    async def authenticate(self, token: str) -> bool:
        async with self.session() as db:
            reader = await reader_for_token(db, token)
        if reader is None:
            return False
        self.token, self._reader = token, reader
        self._keys = await self.keyring.keys()
        return True


def _bearer(payload: dict[str, Any]) -> str:
    value = payload.get("Authorization", payload.get("authorization"))
    if not isinstance(value, str):
        return ""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class _ErrorsWithCodes:
    """The schema as the handler uses it (`stream`), with every error formatted as the HTTP
    view formats it: a RecallError keeps its message and code; anything else is masked."""

    def __init__(self, schema: Any) -> None:
        self._schema = schema

    def __getattr__(self, name: str) -> Any:
        return getattr(self._schema, name)

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        source = await self._schema.stream(*args, **kwargs)
        return _with_codes(source)


async def _with_codes(source: Any) -> AsyncGenerator[Any, None]:
    async with contextlib.aclosing(source):
        async for result in source:
            if getattr(result, "errors", None):
                # Nothing executed (syntax, validation, variables): the client sent something
                # malformed, as the HTTP view reads a request error.
                request_error = isinstance(result, PreExecutionError)
                result.errors = [_coded(e, request_error) for e in result.errors]
            yield result


def _coded(error: GraphQLError, request_error: bool) -> GraphQLError:
    seen = shown(error, request_error)
    if seen.unexpected:
        _log.error("live: unexpected error", exc_info=error.original_error)
    return GraphQLError(
        seen.message,
        nodes=error.nodes,
        path=error.path,
        extensions={**(error.extensions or {}), **seen.extensions, "code": seen.code},
    )


class RecallWebSocketAdapter(ASGIWebSocketAdapter):
    """strawberry's WebSocket adapter, each frame read by json.loads. The view's decode_json
    answers HTTP requests (anything but an object is an HTTPException, 400), which the
    WebSocket loop does not catch: a frame of invalid JSON or `[]` dropped the socket with no
    close frame. Here invalid JSON closes 4400 as strawberry intends, and a frame that is not
    an object reaches RecallTransportWS.handle_message, which closes it 4400 too. The loop is
    strawberry's own (0.341.2, pinned)."""

    async def iter_json(
        self, *, ignore_parsing_errors: bool = False
    ) -> AsyncGenerator[object, None]:
        ws = self.ws
        try:
            while ws.application_state != WebSocketState.DISCONNECTED:
                try:
                    yield json.loads(await ws.receive_text())
                except (json.JSONDecodeError, RecursionError) as e:
                    if not ignore_parsing_errors:
                        raise NonJsonMessageReceived from e
        except KeyError as e:  # a binary frame
            raise NonTextMessageReceived from e
        except WebSocketDisconnect:
            pass


class RecallTransportWS(BaseGraphQLTransportWSHandler[Any, None]):
    """strawberry's graphql-transport-ws handler with Recall's authentication (4401), error
    codes and send timeout (4008)."""

    def __init__(self, *, schema: Any, **kwargs: Any) -> None:
        super().__init__(schema=cast(Any, _ErrorsWithCodes(schema)), **kwargs)
        if isinstance(self.context, LiveContext):
            self.context.handler = self
        self._closed = False

    async def handle_message(self, message: Message) -> None:
        # A frame of JSON that is not an object (`[]`, `"x"`) failed strawberry's lookup of its
        # type with a TypeError: the socket dropped with no close frame. It is a message the
        # protocol cannot parse, closed 4400 like any other.
        if not isinstance(message, dict):
            await self.handle_invalid_message("WebSocket message must be a JSON object")
            return
        await super().handle_message(message)

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        context = self.context
        if not self.connection_init_received and isinstance(context, LiveContext):
            payload = message.get("payload") or {}
            token = _bearer(payload) if isinstance(payload, dict) else ""
            try:
                known = await context.authenticate(token)
            except RecallError:
                await self.close(UNAVAILABLE, "the database is unavailable; try again shortly")
                return
            except Exception:
                _log.exception("live: connection_init failed")
                await self.close(UNAVAILABLE, "internal server error")
                return
            if not known:
                if self.connection_init_timeout_task:
                    self.connection_init_timeout_task.cancel()
                await self.close(UNAUTHORIZED, "missing or unknown bearer token")
                return
        await super().handle_connection_init(message)

    async def send_message(self, message: Message) -> None:
        if self._closed:
            return
        timeout = (
            self.context.settings.live_send_timeout
            if isinstance(self.context, LiveContext)
            else 10.0
        )
        try:
            async with asyncio.timeout(timeout):
                await super().send_message(message)
        except TimeoutError:
            await self.close(TOO_SLOW, "too slow: the client did not read its messages")

    async def close(self, code: int, reason: str) -> None:
        """Close the socket once (bounded: a client that reads nothing may not take the close
        frame either), and stop its operations."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1):
                await self.websocket.close(code=code, reason=reason)
        # Every operation ends, the one that found the client too slow included (cancelled,
        # it stops at its next await): its subscription leaves the hub and nothing more is
        # produced for a socket that takes nothing.
        for operation in list(self.operations.values()):
            if operation.task is not None:
                operation.task.cancel()


# strawberry's default wait for connection_init is a minute; ten seconds is plenty.
CONNECTION_INIT_WAIT = timedelta(seconds=10)
