"""Driving live push as a client does: a real uvicorn server (in this process's event loop, or
`recall serve` as a subprocess) and a real WebSocket client speaking graphql-transport-ws
(the `websockets` package), besides the connector's applyChanges over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from app.server import create_app
from app.settings import Settings
from tests.changes_support import Connector
from tests.client import GraphQLClient
from tests.servers import free_port

SEARCH_UPDATES = """
subscription($query: String!, $scopeId: ID, $after: String) {
  messageSearchUpdates(query: $query, scopeId: $scopeId, after: $after) {
    event kind removedId
    edge { cursor node { id key body } highlights { start end } }
  }
}
"""

SCOPE_MESSAGES = """
subscription($scopeId: ID!, $after: String) {
  scopeMessages(scopeId: $scopeId, after: $after) {
    event kind removedId
    message { id key body }
  }
}
"""


@asynccontextmanager
async def live_server(dsn: str, **env: Any) -> AsyncIterator[str]:
    """A real uvicorn server of the app on a free port, in this event loop; its base URL."""
    settings = Settings(RECALL_TEXT_REMOVAL_INTERVAL=0, **env)
    port = free_port()
    config = uvicorn.Config(
        create_app(settings, dsn),
        host="127.0.0.1",
        port=port,
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            assert not task.done(), "the server stopped"
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


@asynccontextmanager
async def http_client(base: str) -> AsyncIterator[GraphQLClient]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        yield GraphQLClient(http)


@asynccontextmanager
async def connector(base: str, token: str) -> AsyncIterator[Connector]:
    async with http_client(base) as client:
        yield Connector(client, token)


@dataclass
class Live:
    """One graphql-transport-ws connection."""

    ws: ClientConnection
    base: str
    _ids: int = 0
    # Messages of operations not read yet, by operation id.
    inbox: dict[str, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)
    _reader: asyncio.Task[None] | None = None

    async def subscribe(
        self, query: str, variables: dict[str, Any], *, listening: bool = True
    ) -> Subscription:
        """Start a subscription; with `listening`, return once the server counts it among its
        open ones (`recall_live_subscriptions`): every commit from then on reaches it. A
        subscription expected to fail passes listening=False."""
        self._ids += 1
        op = str(self._ids)
        self.inbox[op] = asyncio.Queue()
        before = await open_subscriptions(self.base) if listening else 0
        await self.ws.send(
            json.dumps(
                {"id": op, "type": "subscribe", "payload": {"query": query, "variables": variables}}
            )
        )
        if listening:
            for _ in range(200):
                if await open_subscriptions(self.base) > before:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the subscription did not start listening")
        return Subscription(self, op)

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                message = json.loads(raw)
                if message.get("type") == "ping":
                    await self.ws.send(json.dumps({"type": "pong"}))
                    continue
                op = message.get("id")
                if op in self.inbox:
                    await self.inbox[op].put(message)

    @property
    def close_code(self) -> int | None:
        return self.ws.close_code


@dataclass
class Subscription:
    live: Live
    id: str

    async def next(self, seconds: float = 10) -> dict[str, Any]:
        """The next update's data (its `next` payload's one field); fails on anything else."""
        message = await asyncio.wait_for(self.live.inbox[self.id].get(), seconds)
        assert message["type"] == "next", message
        payload = message["payload"]
        assert not payload.get("errors"), payload
        data: dict[str, Any] = next(iter(payload["data"].values()))
        return data

    async def message(self, seconds: float = 10) -> dict[str, Any]:
        """The next protocol message of this operation, whatever it is."""
        return await asyncio.wait_for(self.live.inbox[self.id].get(), seconds)

    async def error_codes(self, seconds: float = 10) -> list[str]:
        """The codes of the errors the operation answered with."""
        message = await self.message(seconds)
        errors = (
            message["payload"]
            if message["type"] == "error"
            else message["payload"].get("errors") or []
        )
        assert errors, message
        return [e.get("extensions", {}).get("code") for e in errors]

    async def quiet(self, seconds: float = 1.5) -> list[dict[str, Any]]:
        """Whatever arrives within `seconds` (expected: nothing)."""
        got = []
        with contextlib.suppress(TimeoutError):
            while True:
                got.append(await asyncio.wait_for(self.live.inbox[self.id].get(), seconds))
        return got

    async def complete(self) -> None:
        await self.live.ws.send(json.dumps({"id": self.id, "type": "complete"}))


@asynccontextmanager
async def live_connection(base: str, token: str | None) -> AsyncIterator[Live]:
    """A graphql-transport-ws connection to /graphql, initialised with `token` (acknowledged:
    a bad token fails here; see `refused` for those)."""
    url = base.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        payload = {"Authorization": f"Bearer {token}"} if token is not None else {}
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        ack = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert ack["type"] == "connection_ack", ack
        live = Live(ws, base)
        live._reader = asyncio.create_task(live._read())
        try:
            yield live
        finally:
            live._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await live._reader


async def open_subscriptions(base: str) -> float:
    """The server's `recall_live_subscriptions` gauge (this process's, for an in-process one)."""
    async with httpx.AsyncClient(base_url=base) as http:
        text = (await http.get("/metrics")).text
    for line in text.splitlines():
        if line.startswith("recall_live_subscriptions "):
            return float(line.split()[1])
    return 0.0


async def refused(base: str, payload: dict[str, Any]) -> tuple[int | None, str | None]:
    """The close code and reason of a connection initialised with `payload`."""
    url = base.replace("http://", "ws://") + "/graphql"
    async with connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 10)
        return ws.close_code, ws.close_reason
